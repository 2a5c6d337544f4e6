#!/usr/bin/env bash
# The server's TLS certificate over its life, with the test clock instead of waiting a
# year. The certificate init writes (issued by the server TLS CA, one year) is served and
# seen in bc_tls_certificate_expiry_timestamp_seconds{renewed="auto"}; with the clock
# moved 300 days (past two thirds of its life) the server renews it itself, logs it,
# serves the new one (another serial, a later notAfter) and a real bcd joins and renews
# through it at that date. An operator's certificate (another CA) is never replaced:
# 300 days on it is still served, with a warning in the log and renewed="operator", and
# `pki check` warns, then fails near and past its end.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bcd_lib.sh"
cd "$T"
PORT=$(free_port)
URL="https://127.0.0.1:$PORT"
OFF=$((300 * 24 * 3600 * 1000))
bc init --dir var --listen "127.0.0.1:$PORT" --public-url "$URL" >init.out
KEY=$(cat var/admin.key)

# curl at the server's date: the clock moved 300 days is the server's and bcd's, not
# curl's, so a renewed certificate is verified by `openssl verify -attime` instead
# serve ENV...: the server in the background, up when /healthz answers over TLS
serve() {
	env "$@" "$BIN/better-compute" serve --config var/server.toml >>var/serve.log 2>&1 &
	SERVER_PID=$!
	PIDS="$PIDS $SERVER_PID"
	for _ in $(seq 1 100); do
		curl -sfk "$URL/healthz" >/dev/null && return 0
		kill -0 "$SERVER_PID" 2>/dev/null || { cat var/serve.log >&2; fail "serve exited"; }
		sleep 0.1
	done
	fail "no /healthz over TLS"
}
# served FIELD: serial or enddate of the certificate the server sends now
served() {
	openssl s_client -connect "127.0.0.1:$PORT" -servername 127.0.0.1 </dev/null 2>/dev/null |
		openssl x509 -noout "-$1" | sed 's/^[a-zA-Z]*=//'
}
# expiry_metric: the series' line in /metrics
expiry_metric() {
	curl -fsS ${CURL_TLS:-} -H "Authorization: Bearer $KEY" "$URL/metrics" |
		grep '^bc_tls_certificate_expiry_timestamp_seconds'
}
secs() { date -u -d "$1" +%s; }

serve
CURL_TLS="--cacert var/tls-ca.pem"
S0=$(served serial)
[ "$S0" = "$(openssl x509 -in var/tls.crt -noout -serial | sed 's/^serial=//')" ] ||
	fail "the server does not serve var/tls.crt"
M0=$(expiry_metric)
[ "$M0" = "bc_tls_certificate_expiry_timestamp_seconds{renewed=\"auto\"} $(secs "$(served enddate)")" ] ||
	fail "expiry metric: $M0"
grep -q 'renewed the server TLS certificate' var/serve.log && fail "renewed a certificate not yet due"
bc pki check --config var/server.toml >check0.out || fail "pki check: $(cat check0.out)"
grep -q '^ok    tls certificate        issued by the server TLS CA: the server renews it from' check0.out ||
	fail "pki check: $(cat check0.out)"
# what bcd needs later, made now: the CLI checks the server's certificate at today's date
bc pools create web >/dev/null
bcd_machine m1
new_token var/t1 --ttl 310d
stop_server var

# 300 days on: renewed by the server, from its TLS CA, served at once
CURL_TLS=-k
serve BC_TEST_CLOCK_OFFSET_MS=$OFF
grep -q 'msg="renewed the server TLS certificate" notAfter=' var/serve.log ||
	fail "no renewal logged: $(cat var/serve.log)"
S1=$(served serial)
[ "$S1" != "$S0" ] || fail "the certificate was not replaced"
E0=$(openssl x509 -in var/tls.crt -noout -enddate | sed 's/^notAfter=//')
E1=$(served enddate)
[ $(($(secs "$E1") - $(secs "$E0"))) -gt $((250 * 24 * 3600)) ] || fail "notAfter $E0 -> $E1"
openssl s_client -connect "127.0.0.1:$PORT" </dev/null 2>/dev/null | openssl x509 >renewed.pem
openssl verify -CAfile var/tls-ca.pem -attime $(($(date +%s) + OFF / 1000)) -purpose sslserver \
	renewed.pem >/dev/null || fail "the renewed certificate does not verify under the TLS CA"
openssl x509 -in renewed.pem -noout -ext subjectAltName | grep -q 'IP Address:127.0.0.1' ||
	fail "the renewed certificate lost its names: $(openssl x509 -in renewed.pem -noout -text)"
[ "$(expiry_metric)" = "bc_tls_certificate_expiry_timestamp_seconds{renewed=\"auto\"} $(secs "$E1")" ] ||
	fail "expiry metric after renewal: $(expiry_metric)"
[ "$(openssl x509 -in var/tls.crt -noout -serial | sed 's/^serial=//')" = "$S0" ] ||
	fail "tls.crt on disk was rewritten"

# a real bcd at that date joins and renews through the renewed certificate
BC_TEST_CLOCK_OFFSET_MS=$OFF bcd join --config m1/config.toml --token-file var/t1 >join.out 2>&1 ||
	fail "join through the renewed certificate: $(cat join.out)"
SN0=$(status_field m1 serial)
BC_TEST_CLOCK_OFFSET_MS=$OFF BCD_RENEW_AFTER=1s BCD_RETRY_BASE=1s "$BIN/bcd" node \
	--config m1/config.toml >node.log 2>&1 &
NODE_PID=$!
PIDS="$PIDS $NODE_PID"
for _ in $(seq 1 300); do
	[ "$(grep -c 'msg=renewed' node.log)" -ge 2 ] && break
	kill -0 "$NODE_PID" 2>/dev/null || fail "bcd node exited: $(cat node.log)"
	sleep 0.1
done
[ "$(grep -c 'msg=renewed' node.log)" -ge 2 ] || fail "bcd did not renew twice: $(cat node.log)"
grep -q 'renewal failed' node.log && fail "a renewal failed: $(cat node.log)"
[ "$(status_field m1 serial)" != "$SN0" ] || fail "no new node certificate"
kill -TERM "$NODE_PID"
wait "$NODE_PID" || fail "bcd node exited non-zero"
PIDS=$(echo "$PIDS" | sed "s/ $NODE_PID//")
stop_server var

# an operator's certificate (another CA) is never replaced, its expiry is said
openssl ecparam -name prime256v1 -genkey -noout -out op-ca.key 2>/dev/null
openssl req -x509 -new -key op-ca.key -subj "/CN=operator CA" -days 3650 -out op-ca.pem 2>/dev/null
openssl ecparam -name prime256v1 -genkey -noout -out var/op.key 2>/dev/null
chmod 600 var/op.key
openssl req -new -key var/op.key -subj "/CN=127.0.0.1" -out op.csr 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >op.ext
openssl x509 -req -in op.csr -CA op-ca.pem -CAkey op-ca.key -CAcreateserial -days 365 \
	-extfile op.ext -out var/op.crt 2>/dev/null
sed -i 's/^cert = .*/cert = "op.crt"/; s/^key  *= .*/key  = "op.key"/' var/server.toml
grep -q '^cert = "op.crt"' var/server.toml || fail "server.toml: $(cat var/server.toml)"
: >var/serve.log
CURL_TLS="--cacert op-ca.pem"
serve BC_TEST_CLOCK_OFFSET_MS=$OFF
OPS=$(openssl x509 -in var/op.crt -noout -serial | sed 's/^serial=//')
[ "$(served serial)" = "$OPS" ] || fail "the operator's certificate is not served"
grep -q 'the TLS certificate (\[tls\] cert) expires soon: replace it and restart' var/serve.log ||
	fail "no expiry warning: $(cat var/serve.log)"
grep -q 'renewed the server TLS certificate' var/serve.log && fail "an operator's certificate was replaced"
OPE=$(openssl x509 -in var/op.crt -noout -enddate | sed 's/^notAfter=//')
[ "$(expiry_metric)" = "bc_tls_certificate_expiry_timestamp_seconds{renewed=\"operator\"} $(secs "$OPE")" ] ||
	fail "operator expiry metric: $(expiry_metric)"
# pki check, as an operator's monitoring runs it: a warning 300 days on, a failure
# within 30 days of the end, and ok for a certificate the server renews
BC_TEST_CLOCK_OFFSET_MS=$OFF bc pki check --config var/server.toml >check.out ||
	fail "pki check failed 300 days on: $(cat check.out)"
grep -q '^warn  tls certificate .*var/op.crt expires in [0-9]* days.*replace it before then' check.out ||
	fail "pki check 300 days on: $(cat check.out)"
if BC_TEST_CLOCK_OFFSET_MS=$((350 * 24 * 3600 * 1000)) bc pki check --config var/server.toml >check2.out; then
	fail "pki check passed 15 days before the end: $(cat check2.out)"
fi
grep -q '^fail  tls certificate .*expires in 1[45] days' check2.out || fail "pki check 350 days on: $(cat check2.out)"
if BC_TEST_CLOCK_OFFSET_MS=$((400 * 24 * 3600 * 1000)) bc pki check --config var/server.toml >check3.out; then
	fail "pki check passed after the end"
fi
grep -q '^fail  tls certificate .*expired at .*replace it and restart' check3.out || fail "pki check 400 days on: $(cat check3.out)"
stop_server var
echo "ok: renewed $S0 -> $S1 (notAfter $E0 -> $E1) 300 days on; bcd joined and renewed; the operator's $OPS kept"
