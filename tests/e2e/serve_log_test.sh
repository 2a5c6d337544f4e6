#!/usr/bin/env bash
# What `better-compute serve` logs: the startup line names the version, the store
# engine and file, the listeners (main and metrics_listen) and the attestors that run;
# access_log = true writes one line per request (client, method, path, status,
# duration_ms); a refusal's line ends with the client address (a spent token's
# join refusal; every line logged while a request is served does, lib_log_test checks
# the mechanism). Without access_log, no
# request line. (serve_log_postgres_test: the PostgreSQL URL without its password.)
. "$(dirname "$0")/lib.sh"
cd "$T"
PORT=$(free_port)
MPORT=$(free_port)
bc() { "$BIN/better-compute" "$@"; }
bc init --dir var --listen "127.0.0.1:$PORT" >init.out
URL="http://127.0.0.1:$PORT"
start_server var
token_join var
grep -q 'msg=request ' var/serve.log && fail "a request line without access_log: $(grep 'msg=request' var/serve.log)"
stop_server var

printf 'access_log = true\nmetrics_listen = "127.0.0.1:%s"\n' "$MPORT" >>var/server.toml
: >var/serve.log
start_server var
line=$(grep 'msg="control plane listening"' var/serve.log) || fail "no startup line: $(cat var/serve.log)"
# the version /metrics says this build is
want_version=$(curl -fsS "http://127.0.0.1:$MPORT/metrics" | sed -n 's/^bc_build_info{version="\([^"]*\)"}.*/\1/p')
[ -n "$want_version" ] || fail "no bc_build_info version"
for kv in "version=$want_version " "store=sqlite " "database=var/bc.db " "listen=127.0.0.1:$PORT" \
	"port=$PORT" "metrics_listen=127.0.0.1:$MPORT" "metrics_port=$MPORT" "access_log=on"; do
	case " $line " in *" $kv"*) ;; *) fail "the startup line lacks $kv: $line" ;; esac
done
echo "$line" | grep -Eq ' attestors="?[a-z0-9,-]*join-token' || fail "the startup line names no attestor: $line"

# a refusal: the spent token again; its line names the client
"$BIN/bc-join" --pins var/pins.json --token-file var/token --out var/m2 >join2.out 2>&1 &&
	fail "a spent token joined again"
ref=$(grep 'msg="join refused"' var/serve.log) || fail "no refusal line: $(cat var/serve.log)"
case "$ref" in *" client=127.0.0.1") ;; *) fail "the refusal line does not end with the client address: $ref" ;; esac
case "$ref" in *"reason=token-used-up"*) ;; *) fail "the refusal line: $ref" ;; esac
# the access log: the Join answered 403, the scrape, a 404
curl -s -o /dev/null "$URL/no-such-path"
curl -fsS -o /dev/null "http://127.0.0.1:$MPORT/metrics"
grep 'msg=request ' var/serve.log >access.txt || fail "no request line: $(cat var/serve.log)"
grep -q 'client=127.0.0.1 method=POST path=/bettercompute.join.v1.JoinService/Join status=403 duration_ms=[0-9]' access.txt ||
	fail "no access line for the refused Join: $(cat access.txt)"
grep -q 'client=127.0.0.1 method=GET path=/no-such-path status=404 duration_ms=' access.txt ||
	fail "no access line for the 404: $(cat access.txt)"
grep -q 'method=GET path=/metrics status=200' access.txt || fail "no access line for the scrape"
grep -q 'method=GET path=/healthz status=200' access.txt || fail "no access line for /healthz"
stop_server var
echo "ok: startup line: $line"
echo "refusal: $ref"
echo "access lines: $(wc -l <access.txt); e.g. $(grep 'status=403' access.txt | head -1)"
