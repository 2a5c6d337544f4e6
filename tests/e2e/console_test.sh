#!/usr/bin/env bash
# The web console in headless Chromium (Debian's chromium, driven by npm playwright-core
# from tests/console, installed with `npm ci` into the build tree):
#  - /console/ serves only the embedded files: `..`, `%2e%2e` and a long path are 404,
#    every answer carries the strict Content-Security-Policy, nosniff and no-store;
#  - a real `bcd join --attestor tpm` against swtpm under [attestors.tpm] enrollment
#    waits; the root key signs in, sees the pending join request, approves it in the
#    console, and the node appears (tpm, adopted); tokens, pools, sites, the refusal feed
#    (a refused join's and a retired node's renewal's reasons) and cordon/retire
#    work from the pages; a site node of lab (bcd site) holds its boot lease, which the
#    sites page shows; a ramdisk node discovery admitted through it shows its role and
#    allowed kinds, and Enroll puts it in the pool web;
#  - with 20,000 more nodes in the store, the nodes page counts them from the API, pages
#    forward and back, and finds the last one by a server-side filter and cordons it;
#  - the overview counts the fleet as the store does (by state, role, attestor, pool,
#    certificates) and charts its joins and refusals; a node's page shows its
#    certificates, inventory and events, and a revoked identity says so; search finds a
#    node by id and by product UUID; ids stay on one line at 800 px; the events, audit,
#    workflows, API keys and server pages show what the API says;
#  - a tenant key sees only its tenant's node;
#  - a viewer key (when the server has key roles) sees every page and no action;
#  - the API key is never in a URL, the DOM (beyond the password field) or the log.
# BC_CONSOLE_SCREENSHOTS=DIR writes a PNG of each page into DIR (docs/console/).
# Skipped (77), saying why, without swtpm, node/npm or a Chromium that starts.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bcd_lib.sh"
. "$(dirname "$0")/bcd_tpm_lib.sh"
# a relative screenshot directory is the caller's
SHOTS=${BC_CONSOLE_SCREENSHOTS:-}
[ -z "$SHOTS" ] || { mkdir -p "$SHOTS"; SHOTS=$(cd "$SHOTS" && pwd); }
cd "$T"

CHROMIUM=${BC_CHROMIUM:-/usr/bin/chromium}
[ -x "$CHROMIUM" ] || { echo "SKIP: no Chromium at $CHROMIUM (scripts/deps.sh installs Debian's chromium)"; exit 77; }
for b in node npm; do
	command -v "$b" >/dev/null 2>&1 || { echo "SKIP: $b is missing (scripts/deps.sh installs nodejs and npm)"; exit 77; }
done

# playwright-core into the build tree, from the committed lock file; never a browser
NPM_DIR="$BIN/console-npm"
mkdir -p "$NPM_DIR"
if ! cmp -s "$HERE/../console/package-lock.json" "$NPM_DIR/package-lock.json" ||
	[ ! -d "$NPM_DIR/node_modules/playwright-core" ]; then
	cp "$HERE/../console/package.json" "$HERE/../console/package-lock.json" "$NPM_DIR/"
	(cd "$NPM_DIR" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund >npm.log 2>&1) ||
		fail "npm ci in $NPM_DIR failed: $(tail -5 "$NPM_DIR/npm.log")"
fi

# ---- the control plane: [attestors.tpm] with enrollment into the pool tpm ----
tpm_start tpmA
PORT_A=$TPM_PORT
bc init --dir "$T/var" --listen "127.0.0.1:$(free_port)" >var.init.out
ROOT_KEY=$(cat var/admin.key)
URL=$(sed -n 's/^public_url *= *"\(.*\)"/\1/p' var/server.toml)
start_server var
bc pools create web >/dev/null
POOL=$(bc --json pools create tpm | json_get '["id"]')
SITE=$(bc --json sites create lab | json_get '["id"]')
stop_server var
cat >>var/server.toml <<TOML

[attestors.tpm]
ek_roots = ["$T/tpmA/ca/swtpm-localca-rootca-cert.pem", "$T/tpmA/ca/issuercert.pem"]
enrollment_tenant = "root"
enrollment_site = "$SITE"
enrollment_pool = "$POOL"
retry_after_seconds = 1

[attestors.discovery]
approval = "unknown-machines"
retry_after_seconds = 1
TOML
start_server var

# ---- the static route: embedded files only ----
status_of() { curl -s -o /dev/null -w '%{http_code}' --path-as-is "$URL$1"; }
[ "$(status_of /console/)" = 200 ] || fail "/console/ is not 200"
[ "$(status_of /console)" = 200 ] || fail "/console is not 200"
[ "$(status_of /console/console.js)" = 200 ] || fail "/console/console.js is not 200"
# the server's root is the console's page, not a JSON 404
[ "$(status_of /)" = 200 ] || fail "GET / is not 200"
cmp -s <(curl -sS "$URL/") "$HERE/../../web/index.html" || fail "GET / is not web/index.html"
for p in /console/../healthz /console/..%2fhealthz /console/%2e%2e/healthz /console/%2e%2e/%2e%2e/etc/passwd \
	/console/./index.html /console//index.html /console/index.html/ /console/INDEX.HTML /consolex \
	"/console/$(head -c 4000 /dev/zero | tr '\0' a)"; do
	s=$(status_of "$p")
	case $s in 404 | 414 | 431) ;; *) fail "GET ${p:0:60} answered $s, not 404" ;; esac
done
[ "$(curl -s -o /dev/null -w '%{http_code}' -X POST "$URL/console/")" = 405 ] || fail "POST /console/ is not 405"
curl -sS -D headers.txt -o index.html "$URL/console/"
grep -qi "^Content-Security-Policy: default-src 'none'; script-src 'self';" headers.txt || fail "no strict CSP: $(cat headers.txt)"
grep -qi '^X-Content-Type-Options: nosniff' headers.txt || fail "no nosniff"
grep -qi '^Cache-Control: no-store' headers.txt || fail "no no-store"
grep -qi '^Content-Type: text/html' headers.txt || fail "index.html is not text/html"
cmp -s index.html "$HERE/../../web/index.html" || fail "/console/ is not web/index.html"
curl -sS -D js.txt -o /dev/null "$URL/console/console.js"
grep -qi '^Content-Type: text/javascript' js.txt || fail "console.js is not text/javascript"
if grep -q '<script>' "$HERE/../../web/index.html" || grep -qi ' on[a-z]*=' "$HERE/../../web/index.html"; then
	fail "web/index.html has an inline script or handler"
fi
grep -q 'innerHTML\|outerHTML\|insertAdjacentHTML\|document.write' "$HERE/../../web/console.js" &&
	fail "web/console.js inserts HTML"

# ---- a refused join (for the feed) and a tenant with a node of its own ----
bcd_machine bad
BCD_JOIN_TOKEN=bct_tok_01aaaaaaaaaaaaaaaaaaaaaaaa_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA \
	bcd join --config bad/config.toml >bad.out 2>&1 && fail "a bogus token joined"
REASON=$(bc --json events list --type security.join.refused | python3 -c 'import json,sys
d=json.load(sys.stdin); d=d if isinstance(d,list) else d["events"]; print(d[0]["data"]["reason"])')
[ -n "$REASON" ] || fail "no refusal event"
ACME=$(bc --json tenants create acme | json_get '["id"]')
TENANT_KEY=$(bc --json api-keys create --tenant "$ACME" --name console | json_get '["key"]')
tk() { BC_API_KEY=$TENANT_KEY "$BIN/better-compute" "$@"; }
tk pools create apps >/dev/null
tk tokens create --role node --pool apps --out acme.token >/dev/null
bcd_machine acme1
BCD_JOIN_TOKEN=$(cat acme.token) bcd join --config acme1/config.toml >acme1.out 2>&1 ||
	fail "tenant join: $(cat acme1.out)"
ACME_NODE=$(sed -n 's/^joined as \(node_[0-9a-z]*\)$/\1/p' acme1.out)
[ -n "$ACME_NODE" ] || fail "no tenant node: $(cat acme1.out)"
bcd_machine root1
new_token root1.token
BCD_JOIN_TOKEN=$(cat root1.token) bcd join --config root1/config.toml >root1.out 2>&1 ||
	fail "root join: $(cat root1.out)"
ROOT_NODE=$(sed -n 's/^joined as \(node_[0-9a-z]*\)$/\1/p' root1.out)

# a retired node's renewal is refused (security.renew.refused, for the feed)
bcd_machine root2
new_token root2.token
BCD_JOIN_TOKEN=$(cat root2.token) bcd join --config root2/config.toml >root2.out 2>&1 ||
	fail "root join: $(cat root2.out)"
RETIRED=$(sed -n 's/^joined as \(node_[0-9a-z]*\)$/\1/p' root2.out)
bc nodes retire "$RETIRED" >/dev/null
BCD_RENEW_AFTER=1s BCD_RETRY_BASE=1s "$BIN/bcd" node --config root2/config.toml >root2.log 2>&1 &
RENEW_PID=$!
PIDS="$PIDS $RENEW_PID"
renew_refusals() { bc --json events list --type security.renew.refused | python3 -c 'import json,sys
d=json.load(sys.stdin); d=d if isinstance(d,list) else d["events"]; print(len(d))'; }
for _ in $(seq 1 300); do
	[ "$(renew_refusals)" -ge 1 ] && break
	kill -0 "$RENEW_PID" 2>/dev/null || fail "bcd node exited: $(cat root2.log)"
	sleep 0.1
done
[ "$(renew_refusals)" -ge 1 ] || fail "no security.renew.refused: $(tail -3 root2.log)"
kill "$RENEW_PID"
wait "$RENEW_PID" 2>/dev/null || true
PIDS=$(echo "$PIDS" | sed "s/ $RENEW_PID//")

# ---- a site node of lab holds its boot lease (the sites page shows it) ----
bc tokens create --role site --site "$SITE" --out site.token >/dev/null || fail "site token"
bcd_machine s1
bcd join --config s1/config.toml --role site --token-file site.token >s1.join 2>&1 ||
	fail "site join: $(cat s1.join)"
SITE_NODE=$(sed -n 's/^joined as \(node_[0-9a-z]*\).*/\1/p' s1.join)
[ -n "$SITE_NODE" ] || fail "no site node: $(cat s1.join)"
site_serve s1 "$SITE"

# ---- a machine discovery admitted: a ramdisk node the console enrolls ----
bc machines commission --site "$SITE" --mac 52-54-00-00-00-21 >/dev/null || fail "commission"
curl -fsS "http://127.0.0.1:$BOOT_PORT/boot.ipxe?mac=52:54:00:00:00:21" >rd.ipxe || fail "no iPXE script from the site node"
boot_cmdline rd.ipxe >rd.cmdline
bcd_machine rd 2b3c4d5e-6f70-4a8b-9c0d-1e2f3a4b5c6d
sed -i 's/"macs":\["[^"]*"\]/"macs":["52:54:00:00:00:21"]/' rd/claims.json
bcd ramdisk --config rd/config.toml --cmdline rd.cmdline >rd.out 2>&1 || fail "ramdisk: $(cat rd.out)"
RAMDISK_NODE=$(sed -n 's/^joined as \(node_[0-9a-z]*\) (ramdisk)$/\1/p' rd.out)
[ -n "$RAMDISK_NODE" ] || fail "no ramdisk node: $(cat rd.out)"
# a machine no workflow names waits for an operator: the console shows what an approval
# would admit (its claims and CSR hash); the operator denies it there
UMAC=52:54:00:00:00:22
curl -fsS "http://127.0.0.1:$BOOT_PORT/boot.ipxe?mac=$UMAC" >ru.ipxe || fail "no iPXE script for an unknown MAC"
boot_cmdline ru.ipxe >ru.cmdline
bcd_machine ru 3c4d5e6f-7081-4b9c-8d1e-2f3a4b5c6d7e
sed -i "s/\"macs\":\[\"[^\"]*\"\]/\"macs\":[\"$UMAC\"]/" ru/claims.json
"$BIN/bcd" ramdisk --config ru/config.toml --cmdline ru.cmdline >ru.out 2>&1 &
RU_PID=$!
PIDS="$PIDS $RU_PID"
for _ in $(seq 1 100); do grep -q "pending (join request jr_" ru.out && break; sleep 0.1; done
grep -q "pending (join request jr_" ru.out || fail "the unknown machine is not waiting: $(cat ru.out)"

# ---- a fleet of 20,000 more nodes, written directly: the nodes page shows counts from
# the store and one page at a time, and reaches any node by its filters ----
FILL=20000
sqlite3 -cmd '.timeout 10000' var/bc.db "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < $FILL)
INSERT INTO nodes (id, tenant_id, role, state, attestor, hostname, joined_at, updated_at)
SELECT printf('node_zzfill%05d', i), 'root', 'node', CASE WHEN i % 4 = 0 THEN 'cordoned' ELSE 'adopted' END,
'join-token', 'fill-' || i, 1, 1 FROM s" || fail "cannot fill the store with $FILL nodes"

# ---- the tpm machine waits for an operator ----
tpm_machine m1 "$PORT_A"
BCD_FAKEHW_TPM_KEYS=1 "$BIN/bcd" join --config m1/config.toml --attestor tpm >join.out 2>join.err &
JOIN_PID=$!
PIDS="$PIDS $JOIN_PID"

# ---- the browser ----
rc=0
NODE_PATH="$NPM_DIR/node_modules" BC_SITE_NODE=$SITE_NODE BC_URL=$URL BC_ROOT_KEY=$ROOT_KEY BC_TENANT_KEY=$TENANT_KEY \
	BC_TENANT=$ACME BC_TENANT_NODE=$ACME_NODE BC_ROOT_NODE=$ROOT_NODE BC_RETIRED_NODE=$RETIRED BC_RAMDISK_NODE=$RAMDISK_NODE BC_DISCOVERY_MAC=$UMAC BC_REASON=$REASON BC_CHROMIUM=$CHROMIUM \
	BC_PROFILE="$T/chromium-profile" BC_SHOTS=$SHOTS BC_FILL=$FILL \
	node "$HERE/../console/console_test.mjs" "$NPM_DIR" 2>&1 | tee browser.out || rc=${PIPESTATUS[0]}
[ "$rc" != 77 ] || exit 77
[ "$rc" = 0 ] || fail "the browser test failed ($rc)"

# the denied machine is refused at its next attempt and gives up
wait "$RU_PID" && fail "a denied machine joined: $(cat ru.out)"
PIDS=$(echo "$PIDS" | sed "s/ $RU_PID//")
grep -q "an operator denied it" ru.out || fail "the denied machine says: $(cat ru.out)"
# the approved machine finished its join
wait "$JOIN_PID" || fail "approved join exited $?: $(cat join.out join.err)"
PIDS=$(echo "$PIDS" | sed "s/ $JOIN_PID//")
grep -q '^joined as node_' join.out || fail "no 'joined as': $(cat join.out)"
grep -q 'join-request.approved' <(bc --json events list --type join-request.approved) ||
	fail "no join-request.approved event"

# the keys never reached the log
for k in "$ROOT_KEY" "$TENANT_KEY"; do
	secret=${k#bck_key_}
	secret=${secret#*_}
	[ ${#secret} -ge 20 ] || fail "cannot take the secret of $k"
	grep -qF "$secret" var/serve.log && fail "an API key's secret is in serve.log"
done
# the console's Enroll left the ramdisk node in the pool web
[ "$(bc --json nodes get "$RAMDISK_NODE" | json_get '["poolName"]')" = web ] || fail "Enroll in the console did not enroll"
echo "PASS console"
