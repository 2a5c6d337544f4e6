#!/usr/bin/env bash
# End to end: the better-compute CLI. init and pki init on disk, then `serve` on a
# loopback port and every admin command against it, as tables and as --json; last,
# an https server on loopback found through ./var/tls-ca.pem.
. "$(dirname "$0")/lib.sh"
# cli_pg_test.sh runs this same test with the server's store on PostgreSQL
if [ "${CLI_ON_PG:-0}" = 1 ]; then
	. "$(dirname "$0")/pg_lib.sh"
fi
CLI="$BIN/better-compute"
JOIN="$BIN/bc-join"
W="$T"
unset BC_SERVER BC_API_KEY BC_API_KEY_FILE

# run STATUS CMD...: runs CMD, keeps its stdout and stderr, checks its exit status
run() {
	local want=$1 st=0
	shift
	"$@" >"$W/out" 2>"$W/err" || st=$?
	if [ "$st" -ne "$want" ]; then
		echo "--- stdout" >&2; cat "$W/out" >&2
		echo "--- stderr" >&2; cat "$W/err" >&2
		fail "exit $st, expected $want: $*"
	fi
}
out_has() { grep -q -e "$1" "$W/out" || { cat "$W/out" >&2; fail "stdout lacks: $1"; }; }
out_lacks() { ! grep -q -e "$1" "$W/out" || { cat "$W/out" >&2; fail "stdout has: $1"; }; }
err_has() { grep -q -e "$1" "$W/err" || { cat "$W/err" >&2; fail "stderr lacks: $1"; }; }
# js EXPR: a Python expression over d, the JSON on stdout
js() {
	python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' \
		"$W/out" "$1"
}
js_is() {
	local got
	got="$(js "$1")"
	[ "$got" = "$2" ] || { cat "$W/out" >&2; fail "$1 is '$got', expected '$2'"; }
}
# sql STATEMENT: runs it on the server's store, as a join would have written it
sql() {
	if [ "${CLI_ON_PG:-0}" = 1 ]; then
		psql "$PGURL" -X -q -tA -v ON_ERROR_STOP=1 -c "$1" >/dev/null
		return
	fi
	python3 -c 'import sqlite3, sys; c = sqlite3.connect(sys.argv[1], timeout=10); c.execute(sys.argv[2]); c.commit()' \
		"$W/var/bc.db" "$1"
}
mode_is() {
	local m
	m="$(stat -c %a "$1")"
	[ "$m" = "$2" ] || fail "$1 has mode $m, expected $2"
}

cd "$W"

echo "== usage errors (exit 2) and help (exit 0)"
run 2 "$CLI"
err_has "usage: better-compute"
run 0 "$CLI" --help
out_has "pools create"
out_has "nodes revoke-identity"
run 0 "$CLI" help tokens create
out_has "expect-product-uuid"
run 0 "$CLI" pools --help
out_has "pools update"
for c in init "pki init" "api-keys create" "api-keys list" "api-keys revoke" "tenants list" "tenants create" "pools create" \
	"pools get" "pools list" "pools update" "sites create" "sites list" "tokens create" \
	"tokens list" "tokens revoke" "nodes list" "nodes get" "nodes cordon" "nodes uncordon" \
	"nodes delete" "nodes revoke-identity" "nodes retire" "events list" "daemon config" \
	"join-requests delete"; do
	# shellcheck disable=SC2086
	run 0 "$CLI" $c --help
	out_has "usage: better-compute $c"
done
run 0 "$CLI" serve --help
run 0 "$CLI" audit list --help
out_has "\-\-since D|TIME"
run 0 "$CLI" nodes list --help
out_has "\-\-expiring-within"

echo "== version, completion and man pages"
VERSION="$(sed -n 's/^project(better_compute VERSION \([0-9.]*\).*/\1/p' "$BC_SOURCE_DIR/CMakeLists.txt")"
[ -n "$VERSION" ] || VERSION="$(grep -o 'VERSION [0-9][0-9.]*' "$BC_SOURCE_DIR/CMakeLists.txt" | head -n 1 | cut -d' ' -f2)"
run 0 "$CLI" --version
out_has "^better-compute $VERSION$"
run 0 "$CLI" version --json
js_is 'd["version"]' "$VERSION"
run 0 "$CLI" completion bash
cp "$W/out" completion.bash
bash -n completion.bash || fail "the completion script does not parse"
[ "$(bash -c '. ./completion.bash; complete -p better-compute')" = "complete -F _better_compute better-compute" ] ||
	fail "the completion script does not register"
# complete_words WORD...: what the script offers for the last word
complete_words() {
	bash -c '. ./completion.bash; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _better_compute; echo "${COMPREPLY[*]}"' _ "$@"
}
[ "$(complete_words better-compute pools up)" = update ] || fail "completion of pools up"
[ "$(complete_words better-compute --tenant acme nodes li)" = list ] || fail "completion after --tenant"
case " $(complete_words better-compute nodes list --exp) " in *" --expiring-within "*) ;; *) fail "completion of nodes list options" ;; esac
case " $(complete_words better-compute au) " in *" audit "*) ;; *) fail "completion of the groups" ;; esac
run 2 "$CLI" completion zsh
err_has "only bash"
bash "$BC_SOURCE_DIR/scripts/manpages.sh" "$BIN" man >/dev/null || fail "manpages.sh"
grep -q '^\.SS pools update$' man/better-compute.1 || fail "the man page lacks pools update"
if command -v groff >/dev/null; then
	groff -man -Tutf8 -ww -z man/better-compute.1 2>groff.err || fail "groff: $(cat groff.err)"
	[ ! -s groff.err ] || fail "groff warns: $(cat groff.err)"
	groff -man -Tutf8 man/better-compute.1 | grep -q "expiring-within" || fail "the rendered man page"
fi
[ ! -e "$BIN/bcd" ] || [ -s man/bcd.1 ] || fail "manpages.sh wrote no bcd.1"

echo "== --json errors and exit codes"
run 2 "$CLI" --json frobnicate
python3 -c 'import json, sys; e = json.load(open(sys.argv[1]))["error"]; assert e["code"] == "USAGE", e; assert "frobnicate" in e["message"], e' "$W/err" ||
	fail "a usage error under --json is not JSON"
run 2 "$CLI" pools list --frob --json
python3 -c 'import json, sys; assert json.load(open(sys.argv[1]))["error"]["code"] == "USAGE"' "$W/err" || fail "--frob under --json"
run 2 "$CLI" nodes list --expiring-within soon
err_has "\-\-expiring-within"
run 2 "$CLI" nodes list --limit 501
err_has "\-\-limit"
run 2 "$CLI" events list --since yesterday
err_has "\-\-since"
run 2 "$CLI" frobnicate
err_has "unknown command"
run 2 "$CLI" pools
err_has "create, get, list, update or delete"
run 2 "$CLI" pools create
err_has "missing argument"
run 2 "$CLI" pools create a b
err_has "unexpected argument"
run 2 "$CLI" pools list --frob
err_has "unknown option --frob"
run 2 "$CLI" pools list --json=yes
err_has "takes no value"
run 2 "$CLI" pools get ..
err_has "is not an id or a name"
run 2 "$CLI" pools create p --policy '{"joinAttestors":'
err_has "\-\-policy is not valid JSON"
run 2 "$CLI" pools create p --policy '[1]'
err_has "\-\-policy must be a JSON object"
run 2 "$CLI" tokens create --role admin --pool p
err_has "\-\-role must be node, site or provisioned"
run 2 "$CLI" tokens create --role node
err_has "give one of \-\-pool"
run 2 "$CLI" tokens create --role provisioned --pool p
err_has "needs \-\-pool and \-\-expect-product-uuid"
run 2 "$CLI" machines deploy
err_has "give \-\-node ID"
run 2 "$CLI" machines commission --site s
err_has "give \-\-site ID and \-\-mac M"
run 2 "$CLI" machines deploy --node n --bcd-url http://example.com/bcd
err_has "\-\-bcd-url: an https:// URL"
run 2 "$CLI" tokens create --role node --pool p --uses 0
err_has "\-\-uses"
run 2 "$CLI" tokens create --role node --pool p --ttl soon
err_has "\-\-ttl"
run 2 "$CLI" events list --limit 5000
err_has "\-\-limit"
run 2 "$CLI" tenants list --tenant root
err_has "\-\-tenant does not apply"
run 2 "$CLI" nodes delete node_x
err_has "run again with --yes"
run 2 "$CLI" pki init
err_has "\-\-config is missing"
run 2 "$CLI" --server http://x serve
err_has "do not apply to serve"

echo "== init"
PORT="$(free_port)"
run 0 "$CLI" init --dir var --listen "127.0.0.1:$PORT"
out_has "shown only this once"
KEY="$(cat var/admin.key)"
case "$KEY" in bck_*) ;; *) fail "var/admin.key does not hold an API key" ;; esac
out_has "$KEY"
for f in secret pki.bundle admin.key; do mode_is "var/$f" 600; done
for f in server.toml tls-ca.pem bc.db; do [ -s "var/$f" ] || fail "var/$f missing"; done
[ ! -e var/tls.crt ] || fail "a loopback init wrote a TLS certificate"
grep -Eq '^[0-9a-f]{64}$' var/secret || fail "var/secret is not 64 hex characters"
[ "$(stat -c %s var/secret)" = 65 ] || fail "var/secret is not 64 characters and a newline"
grep -q "public_url  = \"http://127.0.0.1:$PORT\"" var/server.toml || fail "public_url"
grep -q 'database    = "bc.db"' var/server.toml || fail "database"
grep -q "BEGIN CERTIFICATE" var/tls-ca.pem || fail "tls-ca.pem"
run 1 "$CLI" init --dir var
err_has "already initialized: var/server.toml exists"
[ "$(cat var/admin.key)" = "$KEY" ] || fail "a refused init changed admin.key"

run 0 "$CLI" init --dir tls --listen 0.0.0.0:8443 --public-url https://cp.example.test:8443 \
	--trust-domain example.test --json
js_is 'd["publicUrl"]' "https://cp.example.test:8443"
js_is 'd["apiKey"].startswith("bck_")' True
mode_is tls/tls.key 600
mode_is tls/tls.crt 600
grep -q '^\[tls\]' tls/server.toml || fail "no [tls] section"
if command -v openssl >/dev/null; then
	openssl verify -CAfile tls/tls-ca.pem tls/tls.crt >/dev/null || fail "tls.crt is not signed by tls-ca.pem"
	openssl x509 -in tls/tls.crt -noout -text | grep -q "DNS:cp.example.test" || fail "TLS SAN"
fi

run 2 "$CLI" init --dir bad --trust-domain 'Not A Domain'
[ ! -e bad ] || fail "a failed init left bad/ behind"
mkdir keep
run 2 "$CLI" init --dir keep --trust-domain 'Not_A_Domain'
[ -z "$(ls -A keep)" ] || fail "a failed init left files in keep/"
run 0 "$CLI" init --dir keep
run 2 "$CLI" init --dir x --listen 10.0.0.1:80 --public-url http://10.0.0.1
err_has "plain HTTP"
run 2 "$CLI" init --dir x --listen 0.0.0.0:443
err_has "\-\-public-url"

echo "== pki init"
mkdir pk
printf 'listen = "127.0.0.1:1"\npublic_url = "http://127.0.0.1:1"\ndatabase = "bc.db"\nsecret_file = "secret"\npki_bundle = "pki.bundle"\n' >pk/server.toml
run 0 "$CLI" pki init --config pk/server.toml
mode_is pk/pki.bundle 600
mode_is pk/secret 600
cp pk/pki.bundle pk/bundle.before
run 1 "$CLI" pki init --config pk/server.toml
err_has "exists"
cmp -s pk/pki.bundle pk/bundle.before || fail "pki init overwrote a bundle"
run 1 "$CLI" pki init --config pk/nonexistent.toml

echo "== serve"
if [ "${CLI_ON_PG:-0}" = 1 ]; then
	"$CLI" store copy --from var/bc.db --to "$PGURL" >/dev/null || fail "store copy to PostgreSQL"
	sed -i "s|^database *=.*|database    = \"$PGURL\"|" var/server.toml
fi
start_server var

echo "== transport and key errors"
run 1 "$CLI" --server http://127.0.0.1:1 tenants list
err_has "cannot reach the control plane at http://127.0.0.1:1"
err_has "better-compute serve"
run 1 "$CLI" --server http://192.0.2.1:80 tenants list
err_has "refusing to send the API key over plain HTTP"
run 1 "$CLI" --api-key not-a-key tenants list
err_has "not a better-compute API key"
run 1 "$CLI" --api-key bck_key_00000000000000000000000000_AAAA tenants list
err_has "ACCESS_DENIED"
run 1 env HOME="$W" "$CLI" --server "http://127.0.0.1:$PORT" --api-key-file nonexistent tenants list
err_has "cannot read the API key file"

echo "== tenants and api-keys"
run 0 "$CLI" tenants list
out_has "^ID  *NAME  *CREATED"
out_has "^root  *root"
run 0 "$CLI" tenants list --json
js_is 'd["tenants"][0]["id"]' root
run 0 "$CLI" tenants create acme --json
ACME="$(js 'd["id"]')"
run 0 "$CLI" tenants create other
out_has "^NAME  *other"
run 1 "$CLI" tenants create acme
err_has "^better-compute: CONFLICT: "
run 0 "$CLI" api-keys create --tenant "$ACME" --name ci
out_has "shown only this once"
ACME_KEY="$(grep '^bck_' "$W/out")"
run 0 "$CLI" --json api-keys create --name root2
js_is 'd["key"].startswith("bck_")' True
js_is 'd["tenantId"]' root
run 2 "$CLI" api-keys create
err_has "\-\-name is missing"
echo "$ACME_KEY" >acme.key
chmod 600 acme.key
run 0 "$CLI" --api-key-file acme.key tenants list --json
js_is 'len(d["tenants"])' 1
js_is 'd["tenants"][0]["id"]' "$ACME"
run 1 "$CLI" --api-key-file acme.key pools list --tenant root
err_has "NOT_FOUND"
run 0 env BC_API_KEY="$ACME_KEY" "$CLI" pools create acme-pool
out_has "^TENANT  *$ACME"
# a key with a lifetime, listed with its last use; revoked, it is refused
run 2 "$CLI" api-keys create --name short --ttl soon
err_has "\-\-ttl: expected a duration"
run 1 "$CLI" api-keys create --name short --ttl 10s
err_has "\-\-ttl: expected a duration from 1m to"
run 0 "$CLI" --json api-keys create --tenant "$ACME" --name temp --ttl 720h
TEMP_ID="$(js 'd["id"]')"
TEMP_KEY="$(js 'd["key"]')"
js_is 'd["expiresAt"] is not None' True
run 0 env BC_API_KEY="$TEMP_KEY" "$CLI" tenants list
run 0 "$CLI" api-keys list --tenant "$ACME"
out_has "^ID  *NAME  *ROLE  *CREATED  *EXPIRES  *LAST USED  *REVOKED"
out_has "^$TEMP_ID  *temp  *admin"
# a key of less than admin: it reads, and a write is refused naming the role it needs
run 0 "$CLI" --json api-keys create --tenant "$ACME" --name dash --role viewer
js_is 'd["role"]' viewer
VIEW_KEY="$(js 'd["key"]')"
run 0 env BC_API_KEY="$VIEW_KEY" "$CLI" pools list
run 1 env BC_API_KEY="$VIEW_KEY" "$CLI" pools create view-pool
err_has "ACCESS_DENIED: this API key's role is viewer: POST /v1/tenants/{t}/pools needs role operator or above"
run 1 "$CLI" api-keys create --tenant "$ACME" --name bad --role root
err_has "apiKey.role: expected admin, operator, viewer or metrics"
run 0 "$CLI" --json api-keys list --tenant "$ACME"
js_is '[k["lastUsedAt"] is not None for k in d["apiKeys"] if k["id"] == "'"$TEMP_ID"'"]' '[True]'
js_is '"key" in d["apiKeys"][0] or "secretHash" in d["apiKeys"][0]' False
run 0 "$CLI" api-keys revoke "$TEMP_ID" --tenant "$ACME"
out_has "^REVOKED  *[0-9]"
run 1 env BC_API_KEY="$TEMP_KEY" "$CLI" tenants list
err_has "ACCESS_DENIED"
run 1 "$CLI" api-keys revoke key_00000000000000000000000000 --tenant "$ACME"
err_has "NOT_FOUND"

echo "== pools"
run 0 "$CLI" pools create p1 --join-attestors join-token
out_has "^ATTESTORS  *join-token"
run 0 "$CLI" pools create p2 --policy '{"note":"keep me"}' --json
P2="$(js 'd["id"]')"
js_is 'd["policy"]["note"]' "keep me"
run 1 "$CLI" pools create p3 --join-attestors no-such-attestor
err_has "^better-compute: INVALID_INPUT: .*joinAttestors"
run 0 "$CLI" pools update "$P2" --join-attestors join-token --json
js_is 'd["policy"]["note"]' "keep me"
js_is 'd["policy"]["joinAttestors"]' "['join-token']"
run 1 "$CLI" pools update "$P2" --join-attestors ''
err_has "INVALID_INPUT"
run 0 "$CLI" pools update "$P2" --name p2b
out_has "^NAME  *p2b"
run 2 "$CLI" pools update "$P2"
err_has "nothing to update"
run 0 "$CLI" pools get "$P2"
out_has "^POLICY  *{"
run 0 "$CLI" pools get "$P2" --json
js_is 'd["name"]' p2b
run 1 "$CLI" pools get pool_nosuch
err_has "NOT_FOUND"
run 1 "$CLI" --json pools get pool_nosuch
python3 -c 'import json, sys; e = json.load(open(sys.argv[1]))["error"]; assert e["code"] == "NOT_FOUND", e' "$W/err" ||
	fail "a server refusal under --json is not JSON"
[ ! -s "$W/out" ] || fail "an error printed on stdout"
echo "== names where ids go"
# the docs' own example: a pool by name
run 0 "$CLI" pools create web
run 0 "$CLI" pools update web --join-attestors join-token
out_has "^ATTESTORS  *join-token$"
run 0 "$CLI" pools get web --json
js_is 'd["policy"]["joinAttestors"]' "['join-token']"
run 1 "$CLI" pools get nosuch
err_has 'NOT_FOUND: no pool with the name or id "nosuch"'
run 1 "$CLI" --json pools update nosuch --name x
python3 -c 'import json, sys; e = json.load(open(sys.argv[1]))["error"]; assert e["code"] == "NOT_FOUND" and "nosuch" in e["message"], e' "$W/err" ||
	fail "an unknown name under --json"
# a tenant by name, in --tenant and api-keys create --tenant
run 0 "$CLI" pools list --tenant acme --json
js_is '[p["name"] for p in d["pools"]]' "['acme-pool']"
run 0 "$CLI" --json api-keys create --tenant acme --name by-name
js_is 'd["tenantId"]' "$ACME"
BYNAME_ID="$(js 'd["id"]')"
run 0 "$CLI" api-keys revoke by-name --tenant acme --json
js_is 'd["id"]' "$BYNAME_ID"
run 1 "$CLI" pools list --tenant nosuch-tenant
err_has 'NOT_FOUND: no tenant with the name or id "nosuch-tenant"'
run 1 "$CLI" --api-key-file acme.key pools get web
err_has 'NOT_FOUND: no pool with the name or id "web" in tenant'
run 0 "$CLI" pools list
out_has "^ID  *NAME  *ATTESTORS  *CREATED"
out_has "  p2b  "
run 0 "$CLI" pools list --json --tenant root
js_is 'len(d["pools"])' 3
P1="$(js '[p["id"] for p in d["pools"] if p["name"] == "p1"][0]')"

echo "== sites"
run 0 "$CLI" sites create s1 --json
S1="$(js 'd["id"]')"
run 0 "$CLI" sites list
out_has "^$S1  *s1"
run 0 "$CLI" sites list --json
js_is 'd["sites"][0]["name"]' s1

echo "== tokens"
run 0 "$CLI" tokens create --role node --pool "$P1" --uses 3 --ttl 2h \
	--expect-mac AA:BB:CC:DD:EE:FF --description "rack 7"
out_has "^bct_"
out_has "3 uses"
out_has "shown only this once"
run 0 "$CLI" tokens create --role site --site "$S1" --json
js_is 'd["secret"].startswith("bct_")' True
js_is 'd["token"]["role"]' site
T2="$(js 'd["token"]["id"]')"
run 0 "$CLI" tokens create --role node --pool "$P1" --out tok.secret
out_lacks "bct_"
out_has "tok.secret"
mode_is tok.secret 600
grep -q '^bct_' tok.secret || fail "tok.secret holds no token"
run 1 "$CLI" tokens create --role node --pool "$P1" --out tok.secret
err_has "exists"
run 1 "$CLI" tokens create --role node --site "$S1"
err_has "INVALID_INPUT"
run 0 "$CLI" tokens list
out_has "^ID  *ROLE  *POOL/SITE  *USES  *STATE  *EXPIRES  *DESCRIPTION"
out_has "  p1  *3/3  *active .*rack 7"
out_lacks "bct_"
run 0 "$CLI" tokens create --role node --pool p1 --json
js_is 'd["token"]["poolId"]' "$P1"
js_is 'd["token"]["poolName"]' p1
run 0 "$CLI" tokens revoke "$T2"
out_has "^STATE  *revoked"
run 0 "$CLI" tokens list --json
js_is "[t['revokedAt'] is not None for t in d['tokens'] if t['id'] == '$T2'][0]" True
js_is "[t['expect']['mac'] for t in d['tokens'] if t['description'] == 'rack 7'][0]" "aa:bb:cc:dd:ee:ff"
js_is "'secret' in str(d)" False

echo "== daemon config"
run 0 "$CLI" daemon config
js_is 'd["server"]' "http://127.0.0.1:$PORT"
js_is 'sorted(d)' "['caBundle', 'joinEncryptionKey', 'joinSigningKey', 'joinSigningKeyId', 'server', 'trustDomain']"
run 0 "$CLI" daemon config --out pins.json
out_has "pins.json"
python3 -c 'import json, sys; json.load(open(sys.argv[1]))' pins.json || fail "pins.json"

echo "== nodes"
run 0 "$CLI" nodes list
out_has "^ID  *STATE  *POOL  *HOSTNAME  *EXPIRES$"
run 1 "$CLI" nodes get node_nosuch
err_has "NOT_FOUND"
if [ -x "$JOIN" ]; then
	run 0 "$JOIN" --pins pins.json --token-file tok.secret --out n1 --hostname cli-host \
		--mac aa:bb:cc:00:00:01
	run 0 "$CLI" nodes list --json
	N="$(js 'd["nodes"][0]["id"]')"
	run 0 "$CLI" nodes list
	out_has "^$N  *adopted  *p1  *cli-host  *in 2[34]h[0-9][0-9]m$"
	awk 'length > 100 { exit 1 }' "$W/out" || fail "nodes list is wider than 100 columns"
	# the CLI's clock 26 hours on: the certificate lapsed 2 hours ago
	run 0 env BC_TEST_CLOCK_OFFSET_MS=$((26 * 3600 * 1000)) "$CLI" nodes list
	out_has "^$N .* expired [12]h ago$"
	run 0 "$CLI" tokens create --role node --pool "$P1" --out tok2.secret
	run 0 "$JOIN" --pins pins.json --token-file tok2.secret --out n2 --hostname cli-host2 \
		--mac aa:bb:cc:00:00:02
	run 0 "$CLI" nodes get cli-host2 --json
	N2="$(js 'd["id"]')"
	js_is 'd["poolName"]' p1
	# filters, in SQL on the server
	run 0 "$CLI" nodes list --pool p1 --state adopted --attestor join-token --json
	js_is 'len(d["nodes"])' 2
	run 0 "$CLI" nodes list --pool web --json
	js_is 'len(d["nodes"])' 0
	run 0 "$CLI" nodes list --state retired --json
	js_is 'len(d["nodes"])' 0
	run 0 "$CLI" nodes list --attestor tpm --json
	js_is 'len(d["nodes"])' 0
	run 0 "$CLI" nodes list --expiring-within 2h --json
	js_is 'len(d["nodes"])' 0
	run 0 "$CLI" nodes list --expiring-within 25h --json
	js_is 'len(d["nodes"])' 2
	run 1 "$CLI" nodes list --pool nosuch
	err_has 'NOT_FOUND: no pool with the name or id "nosuch"'
	# pages: a page with more after it names the next cursor, the last page none;
	# the page after the first names the one before it
	run 0 "$CLI" nodes list --limit 1
	FIRST="$(awk 'NR == 2 { print $1 }' "$W/out")"
	err_has "more nodes: add \-\-cursor "
	NEXT="$(sed -n 's/^more nodes: add --cursor //p' "$W/err")"
	run 0 "$CLI" nodes list --limit 1 --cursor "$NEXT" --json
	js_is 'len(d["nodes"])' 1
	js_is 'd["nodes"][0]["id"] > "'"$FIRST"'"' True
	js_is 'd["nextCursor"]' None
	run 0 "$CLI" nodes list --limit 1 --cursor "$(js 'd["prevCursor"]')" --json
	js_is 'd["nodes"][0]["id"]' "$FIRST"
	js_is 'd["prevCursor"]' None
	# --after ID, the older form, still pages in id order
	run 0 "$CLI" nodes list --limit 2 --after "$FIRST" --json
	js_is 'len(d["nodes"])' 1
	run 1 "$CLI" nodes list --cursor "$NEXT" --expiring-within 2h
	err_has "cursor: not a cursor of this list"
	# an ambiguous hostname names the nodes it matches
	sql "UPDATE nodes SET hostname = 'cli-host' WHERE id = '$N2'"
	run 1 "$CLI" nodes get cli-host
	err_has "AMBIGUOUS: 2 nodes have the hostname \"cli-host\": "
	err_has "$N"
	err_has "$N2"
	run 1 "$CLI" nodes cordon no-such-host
	err_has 'NOT_FOUND: no node with the hostname or id "no-such-host"'
	sql "UPDATE nodes SET hostname = 'cli-host2' WHERE id = '$N2'"
	run 0 "$CLI" nodes cordon cli-host2
	out_has "node $N2 cordoned"
	run 0 "$CLI" events list --node cli-host2 --json
	js_is '[e["type"] for e in d["events"]]' "['node.cordoned', 'node.joined']"
	run 0 "$CLI" audit list --node "$N2" --json
	js_is '[a["action"] for a in d["audit"]]' "['node.cordoned', 'node.joined']"
	js_is 'd["audit"][0]["actor"].startswith("api:key_")' True
	run 0 "$CLI" nodes retire cli-host2
	run 0 "$CLI" nodes delete cli-host2 --yes
	run 0 "$CLI" nodes get "$N"
	out_has "^MACS  *aa:bb:cc:00:00:01"
	out_has "^CERT EXPIRES  *20"
	run 0 "$CLI" nodes get "$N" --json
	js_is 'd["hostname"]' cli-host
	# a join-token node has no allowed command kinds; the discovery attestor's do
	js_is 'd["allowedKinds"]' "[]"
	sql "UPDATE nodes SET allowed_kinds = '[\"disk.wipe\",\"diag.*\"]' WHERE id = '$N'"
	run 0 "$CLI" nodes get "$N"
	out_has "^ALLOWED KINDS  *disk\.wipe,diag\.\*$"
	run 0 "$CLI" nodes get "$N" --json
	js_is 'd["allowedKinds"]' "['disk.wipe', 'diag.*']"
	run 1 "$CLI" nodes delete "$N" --yes
	err_has "CONFLICT"
	run 0 "$CLI" nodes cordon "$N"
	out_has "cordoned (state cordoned"
	run 0 "$CLI" nodes uncordon "$N" --json
	js_is 'd["state"]' adopted
	run 0 "$CLI" nodes revoke-identity "$N"
	out_has "identity generation 2"
	run 0 "$CLI" nodes retire "$N" --json
	js_is 'd["state"]' retired
	run 2 "$CLI" nodes delete "$N"
	err_has "would delete node $N"
	run 0 "$CLI" nodes delete "$N" --yes --json
	js_is 'd["deleted"]' "$N"
	run 0 "$CLI" nodes list --json
	js_is 'len(d["nodes"])' 0
	run 1 "$CLI" nodes cordon "$N"
	err_has "NOT_FOUND"
else
	echo "(bc-join not built: node actions on a live node skipped)"
	run 1 "$CLI" nodes cordon node_nosuch
	err_has "NOT_FOUND"
fi

echo "== join-requests delete"
sql "INSERT INTO join_requests (id, tenant_id, attestor, request_key, csr_sha256, state, created_at, expires_at) VALUES ('jr_cli1', 'root', 'discovery', 'site:x/mac:aa', 'aa', 'pending', 1000, 99999999999999)"
run 0 "$CLI" join-requests list
out_has "jr_cli1"
run 0 "$CLI" join-requests delete jr_cli1
out_has "join request jr_cli1 deleted"
run 0 "$CLI" join-requests list --json
js_is 'len(d["joinRequests"])' 0
run 1 "$CLI" join-requests delete jr_cli1
err_has "NOT_FOUND"
run 2 "$CLI" join-requests delete
err_has "missing argument"

echo "== events"
run 0 "$CLI" events list
out_has "^TIME  *TYPE  *SUBJECT  *DATA"
out_has "pool.created"
run 0 "$CLI" events list --type pool.created --limit 1 --json
js_is 'len(d["events"])' 1
js_is 'd["events"][0]["type"]' pool.created
run 0 "$CLI" events list --since 1h --type pool.created --json
js_is 'len(d["events"]) >= 3' True
run 0 "$CLI" events list --since 2000-01-01T00:00:00Z --type pool.created --json
js_is 'len(d["events"]) >= 3' True
run 0 "$CLI" events list --since "$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)" --json
js_is 'len(d["events"])' 0
run 0 "$CLI" events list --tenant acme --type pool.created --json
js_is '[e["tenantId"] for e in d["events"]]' "['$ACME']"

echo "== audit"
run 0 "$CLI" audit list
out_has "^TIME  *ACTOR  *ACTION  *SUBJECT  *DATA"
out_has "pool.updated"
run 0 "$CLI" audit list --action pool.created --since 1h --limit 2 --json
js_is 'len(d["audit"])' 2
js_is 'set(a["action"] for a in d["audit"])' "{'pool.created'}"
run 2 "$CLI" audit list --limit 0
err_has "\-\-limit"

echo "== /healthz names the version"
curl -sf "http://127.0.0.1:$PORT/healthz" >"$W/out" || fail "/healthz"
js_is 'd["version"]' "$VERSION"
js_is 'd["status"]' ok

echo "== SIGTERM"
stop_server var

echo "== https on loopback: the CA of ./var/tls-ca.pem by default"
mkdir h
cd h
HPORT="$(free_port)"
run 0 "$CLI" init --listen "127.0.0.1:$HPORT" --public-url "https://127.0.0.1:$HPORT"
[ -s var/tls.crt ] || fail "an https init wrote no TLS certificate"
# lib.sh's start_server polls /healthz without the CA: wait here with it
"$CLI" serve --config var/server.toml >>var/serve.log 2>&1 &
SERVER_PID=$!
PIDS="$PIDS $SERVER_PID"
for _ in $(seq 1 100); do
	curl -sf --cacert var/tls-ca.pem "https://127.0.0.1:$HPORT/healthz" >/dev/null && break
	kill -0 "$SERVER_PID" 2>/dev/null || { cat var/serve.log >&2; fail "serve (https) exited"; }
	sleep 0.1
done
run 0 "$CLI" tenants list
out_has "^root  *root"
run 1 "$CLI" --ca-file ../var/tls-ca.pem tenants list
err_has "cannot verify the TLS certificate"
run 1 "$CLI" --ca-file nonexistent.pem tenants list
err_has "\-\-ca-file nonexistent.pem: no such file"
stop_server var
cd "$W"

echo "PASS cli_test"
