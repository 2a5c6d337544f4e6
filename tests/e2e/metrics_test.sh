#!/usr/bin/env bash
# GET /metrics with real processes: a root API key reads it (a tenant key, no key and
# a wrong method are refused), and its counters move with the traffic this test sends:
# a join, a refusal, a renewal, and the RPC latency histogram of each; the process,
# fleet and admin series. promtool (Debian's prometheus) checks a real scrape and the
# alert rules of packaging/prometheus-alerts.yml.
. "$(dirname "$0")/lib.sh"
cd "$T"
PORT=$(free_port)
"$BIN/better-compute" init --dir var --listen "127.0.0.1:$PORT" >init.out
start_server var
URL="http://127.0.0.1:$PORT"
KEY=$(cat var/admin.key)
bc() { "$BIN/better-compute" "$@"; }
scrape() { curl -fsS -H "Authorization: Bearer $KEY" "$URL/metrics" >"$1" || fail "scrape failed"; }
# value FILE SERIES: the sample of that exact series (0 when absent)
value() { awk -v s="$2" '$1 == s { v = $2 } END { print v == "" ? 0 : v }' "$1"; }

# who may read it
st=$(curl -s -o none.out -w '%{http_code}' "$URL/metrics")
[ "$st" = 401 ] || fail "/metrics without a key answered $st, not 401"
st=$(curl -s -o post.out -w '%{http_code}' -X POST -H "Authorization: Bearer $KEY" "$URL/metrics")
[ "$st" = 405 ] || fail "POST /metrics answered $st, not 405"
ACME=$(bc --json tenants create acme | json_get '["id"]')
AKEY=$(bc --json api-keys create --tenant "$ACME" --name acme-ops | json_get '["key"]')
case "$AKEY" in bck_*) ;; *) fail "no tenant API key: $AKEY" ;; esac
st=$(curl -s -o tenant.out -w '%{http_code}' -H "Authorization: Bearer $AKEY" "$URL/metrics")
[ "$st" = 401 ] || fail "/metrics with a tenant key answered $st, not 401"

scrape before.txt
grep -q '^# TYPE bc_rpc_duration_seconds histogram' before.txt || fail "no RPC histogram"
grep -q '^bc_build_info{version="' before.txt || fail "no build info"
grep -q '^bc_store_up 1' before.txt || fail "store not up"
curl -fsS -H "Authorization: Bearer $KEY" -D headers.txt -o /dev/null "$URL/metrics"
grep -qi '^content-type: text/plain; version=0.0.4' headers.txt || fail "not the text format"

# traffic: a join, a refusal (the spent token again), then bc-load's join and renewal
token_join var
"$BIN/bc-join" --pins var/pins.json --token-file var/token --out var/m2 >join2.out 2>&1 &&
	fail "a spent token joined again"
"$BIN/bc-load" --pins var/pins.json --database var/bc.db --url "$URL" --tokens 1 --clients 1 \
	--renew >load.out || fail "bc-load failed"
grep -q "renewed=1" load.out || fail "the renewal failed: $(cat load.out)"

scrape after.txt
j0=$(value before.txt 'bc_join_outcomes_total{attestor="join-token",outcome="joined"}')
j1=$(value after.txt 'bc_join_outcomes_total{attestor="join-token",outcome="joined"}')
[ "$j1" -eq $((j0 + 2)) ] || fail "joined went from $j0 to $j1, not +2"
r1=$(value after.txt 'bc_join_refusals_total{attestor="join-token",reason="token-used-up"}')
[ "$r1" -eq 1 ] || fail "token-used-up refusals: $r1, not 1"
n1=$(value after.txt 'bc_renew_outcomes_total{outcome="renewed"}')
[ "$n1" -eq 1 ] || fail "renewals: $n1, not 1"
grep -q '^bc_join_outcomes_total{attestor="renew"' after.txt &&
	fail "renewals are still counted as an attestor renew in bc_join_outcomes_total"
rf=$(value after.txt 'bc_renew_outcomes_total{outcome="refused"}')
[ "$rf" -eq 0 ] || fail "renewals refused: $rf, not 0"
c200=$(value after.txt 'bc_rpc_duration_seconds_count{method="Join",code="200"}')
c403=$(value after.txt 'bc_rpc_duration_seconds_count{method="Join",code="403"}')
cren=$(value after.txt 'bc_rpc_duration_seconds_count{method="Renew",code="200"}')
[ "$c200" -eq 2 ] && [ "$c403" -eq 1 ] && [ "$cren" -eq 1 ] ||
	fail "RPC counts: Join 200 $c200, Join 403 $c403, Renew 200 $cren"
inf=$(value after.txt 'bc_rpc_duration_seconds_bucket{method="Join",code="200",le="+Inf"}')
[ "$inf" -eq 2 ] || fail "the +Inf bucket holds $inf, not 2"
w0=$(value before.txt 'bc_store_transactions_total{mode="write"}')
w1=$(value after.txt 'bc_store_transactions_total{mode="write"}')
[ "$w1" -gt "$w0" ] || fail "write transactions did not move ($w0, $w1)"
ws=$(value after.txt 'bc_store_transaction_seconds_total{mode="write"}')
awk -v v="$ws" 'BEGIN { exit !(v > 0) }' || fail "no time spent in write transactions: $ws"
# the top bucket is past the 3 s after which queued requests are shed
grep -q '^bc_rpc_duration_seconds_bucket{method="Join",code="200",le="10"} 2$' after.txt ||
	fail "no 10 s bucket holding both joins"
# the admin API: the CLI's tenants, api-keys, pools and tokens create at least
a201=$(value after.txt 'bc_admin_requests_total{method="POST",code="201"}')
[ "$a201" -ge 4 ] || fail "admin POST 201: $a201, not at least 4"
# the process, read from /proc; the scrape's own connection is open while it renders
for s in process_cpu_seconds_total process_resident_memory_bytes process_open_fds \
	process_max_fds process_start_time_seconds bc_http_connections; do
	v=$(value after.txt "$s")
	awk -v v="$v" 'BEGIN { exit !(v > 0) }' || fail "$s is $v, not above 0"
done
now=$(date +%s)
ca=$(value after.txt bc_node_ca_expiry_timestamp_seconds)
[ "$ca" -gt "$now" ] || fail "node CA expiry $ca is not after now ($now)"
promtool check metrics <after.txt >promtool.out 2>&1 || fail "promtool check metrics: $(cat promtool.out)"
promtool check rules "$BC_SOURCE_DIR/packaging/prometheus-alerts.yml" >rules.out 2>&1 ||
	fail "promtool check rules: $(cat rules.out)"
grep -q "SUCCESS: 1[0-9] rules found" rules.out || fail "the rules: $(cat rules.out)"
stop_server var

# the fleet gauges of a server that has read no fleet yet (they are kept 10 s): the two
# joined nodes, adopted, each with a 24 h certificate
start_server var
scrape fleet.txt
na=$(value fleet.txt 'bc_nodes{state="adopted"}')
e2=$(value fleet.txt 'bc_node_certificates_expiring{within="2h"}')
e24=$(value fleet.txt 'bc_node_certificates_expiring{within="24h"}')
e7=$(value fleet.txt 'bc_node_certificates_expiring{within="7d"}')
[ "$na/$e2/$e24/$e7" = "2/0/2/2" ] || fail "fleet: adopted/2h/24h/7d $na/$e2/$e24/$e7, not 2/0/2/2"
promtool check metrics <fleet.txt >promtool2.out 2>&1 || fail "promtool check metrics: $(cat promtool2.out)"
stop_server var
echo "ok: /metrics for a root key only; joined $j0 -> $j1, token-used-up $r1, renewed $n1, Join 200/403 $c200/$c403; admin POST 201 $a201; fleet $na adopted; promtool clean"
echo "--- excerpt"
grep -E '^bc_(join_refusals_total|join_outcomes_total|renew_outcomes_total|rpc_duration_seconds_count|store_transactions_total|join_requests_pending|build_info|admin_requests_total|nodes|node_certificates_expiring)' after.txt fleet.txt
