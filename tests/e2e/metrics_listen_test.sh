#!/usr/bin/env bash
# metrics_listen: a second, plain-HTTP listener that serves GET /metrics without an API
# key and nothing else, while the main listener keeps /metrics for a root key only; and
# packaging/grafana-dashboard.json queries only metric names a real scrape exports.
. "$(dirname "$0")/lib.sh"
cd "$T"
PORT=$(free_port)
MPORT=$(free_port)
"$BIN/better-compute" init --dir var --listen "127.0.0.1:$PORT" >init.out
echo "metrics_listen = \"127.0.0.1:$MPORT\"" >>var/server.toml
start_server var
URL="http://127.0.0.1:$PORT"
MURL="http://127.0.0.1:$MPORT"

# the scrape listener: no key needed, /metrics only, GET only
curl -fsS "$MURL/metrics" >scrape.txt || fail "no key scrape of $MURL/metrics failed"
grep -q '^bc_store_up 1' scrape.txt || fail "the scrape has no bc_store_up 1"
grep -q '^bc_build_info{version="' scrape.txt || fail "the scrape has no build info"
st=$(curl -s -o /dev/null -w '%{http_code}' "$MURL/healthz")
[ "$st" = 404 ] || fail "the metrics listener answered /healthz with $st, not 404"
st=$(curl -s -o /dev/null -w '%{http_code}' "$MURL/v1/admin/tenants")
[ "$st" = 404 ] || fail "the metrics listener answered the admin API with $st, not 404"
st=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$MURL/metrics")
[ "$st" = 405 ] || fail "POST to the metrics listener answered $st, not 405"
# the main listener is unchanged: a root key still needed
st=$(curl -s -o /dev/null -w '%{http_code}' "$URL/metrics")
[ "$st" = 401 ] || fail "/metrics on the main listener without a key answered $st, not 401"
curl -fsS -H "Authorization: Bearer $(cat var/admin.key)" "$URL/metrics" >main.txt ||
	fail "the root-key scrape of the main listener failed"
grep -q '^bc_store_up 1' main.txt || fail "the main listener's scrape has no bc_store_up 1"
grep -q "metrics_listen=127.0.0.1:$MPORT" var/serve.log ||
	fail "the startup log does not name the metrics listener: $(cat var/serve.log)"

# every metric name the dashboard queries is one the scrape declares
DASH=$(dirname "$0")/../../packaging/grafana-dashboard.json
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$DASH" || fail "the dashboard is not JSON"
names=$(python3 - "$DASH" <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1]))
names = set()
for p in d["panels"]:
    for t in p.get("targets", []):
        names.update(re.findall(r"\bbc_[a-z0-9_]+", t["expr"]))
print("\n".join(sorted(names)))
PY
)
[ -n "$names" ] || fail "the dashboard queries no bc_ metric"
n=0
for m in $names; do
	base=$m
	case "$m" in *_bucket | *_count | *_sum) base=${m%_*} ;; esac
	if grep -q "^# TYPE $m " scrape.txt; then :;
	elif [ "$base" != "$m" ] && grep -q "^# TYPE $base histogram" scrape.txt; then :;
	else fail "the dashboard queries $m, which /metrics does not export"; fi
	n=$((n + 1))
done
for want in bc_join_refusals_total bc_join_outcomes_total bc_rpc_duration_seconds_bucket \
	bc_store_transaction_seconds_total bc_join_requests_pending bc_site_lease_epoch \
	bc_requests_shed_total; do
	echo "$names" | grep -qx "$want" || fail "the dashboard has no panel on $want"
done
stop_server var

# what a wrong setting says, before anything listens
refused_config() { # KEY=VALUE LINE, the message expected
	cp var/server.toml bad.toml
	sed -i '/^metrics_listen\|^access_log/d' bad.toml
	echo "$1" >>bad.toml
	sed -i "s|^database *=.*|database = \"$T/var/bc.db\"|; s|^secret_file *=.*|secret_file = \"$T/var/secret\"|; s|^pki_bundle *=.*|pki_bundle = \"$T/var/pki.bundle\"|" bad.toml
	"$BIN/better-compute" serve --config bad.toml >bad.out 2>&1 && fail "serve started with $1"
	grep -qF "$2" bad.out || fail "serve with $1 said: $(cat bad.out)"
}
refused_config 'metrics_listen = "127.0.0.1"' "metrics_listen: listen 127.0.0.1: expected host:port"
refused_config 'metrics_listen = 9464' "metrics_listen: expected a string"
refused_config 'access_log = "yes"' "access_log: expected true or false"
echo "ok: /metrics without a key on $MURL only (404 elsewhere, 405 for POST), main listener 401 without a key; the dashboard's $n metric names are all exported:"
echo "$names"
