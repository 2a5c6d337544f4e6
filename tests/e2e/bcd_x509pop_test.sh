#!/usr/bin/env bash
# x509pop end to end: a machine joined with a token is stopped, the test clock moves past
# its certificate's expiry (BC_TEST_CLOCK_OFFSET_MS for the server and bcd, no sleeping),
# and `bcd node` started again re-joins with x509pop by itself: the same node id, a
# higher identity generation, the old certificate revoked, then renewals again. Then
# `bcd join --attestor x509pop` by hand; its usage errors; and a certificate expired
# beyond the grace period: refused by hand (exit 1, the operator's way out) and by
# `bcd node` (logged with the same hint, retried with backoff, nothing replaced).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bcd_lib.sh"
cd "$T"
H=$((3600 * 1000))

port=$(free_port)
bc init --dir var --listen "127.0.0.1:$port" >var.init.out
printf '\n[attestors.x509pop]\n' >>var/server.toml
start_server var
bc pools create web >/dev/null
bcd_machine m1
new_token var/t1
bcd join --config m1/config.toml --token-file var/t1 >join.out || fail "join: $(cat join.out)"
NODE=$(status_field m1 nodeId)
S0=$(status_field m1 serial)
J0=$(json_get '["joinedAt"]' <m1/data/identity.json)
gen() { bc --json nodes get "$NODE" | json_get '["generation"]'; }
G0=$(gen)

# certs: "serial revoked|valid" for each of the node's certificates, from the store
certs() {
	python3 - "$T/var/bc.db" "$NODE" <<'PY'
import sqlite3, sys
db = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True)
for serial, revoked in db.execute(
        "SELECT serial, revoked_at FROM node_certs WHERE node_id = ? ORDER BY created_at",
        (sys.argv[2],)):
    print(serial, "revoked" if revoked is not None else "valid")
PY
}
cert_state() { certs | awk -v s="$1" '$1 == s { print $2 }'; }
[ "$(cert_state "$S0")" = valid ] || fail "the token join's certificate $S0 is not in the store: $(certs)"

# bcd node runs, and is stopped
BCD_RENEW_AFTER=1h "$BIN/bcd" node --config m1/config.toml >node0.log 2>&1 &
NODE_PID=$!
PIDS="$PIDS $NODE_PID"
for _ in $(seq 1 50); do grep -q msg=started node0.log && break; sleep 0.1; done
grep -q msg=started node0.log || fail "bcd node did not start: $(cat node0.log)"
stop_bcd() {
	kill -TERM "$NODE_PID"
	local rc=0
	wait "$NODE_PID" || rc=$?
	PIDS=$(echo "$PIDS" | sed "s/ $NODE_PID//")
	[ "$rc" = 0 ] || fail "bcd node exited $rc after SIGTERM: $(cat "$1")"
}
stop_bcd node0.log

# wait_log FILE PATTERN [N]: N lines (default 1) matching PATTERN within 30 s
wait_log() {
	local n=${3:-1}
	for _ in $(seq 1 300); do
		[ "$(grep -c -- "$2" "$1" || true)" -ge "$n" ] && return 0
		kill -0 "$NODE_PID" 2>/dev/null || { cat "$1" >&2; fail "bcd node exited"; }
		sleep 0.1
	done
	cat "$1" >&2
	fail "no '$2' (x$n) in $1 within 30 s"
}

# 25 hours later: the certificate has expired; bcd node re-joins with x509pop
OFF=$((25 * H))
stop_server var
start_server var BC_TEST_CLOCK_OFFSET_MS=$OFF
BC_TEST_CLOCK_OFFSET_MS=$OFF BCD_RENEW_AFTER=3s BCD_RETRY_BASE=1s \
	"$BIN/bcd" node --config m1/config.toml >node1.log 2>&1 &
NODE_PID=$!
PIDS="$PIDS $NODE_PID"
wait_log node1.log 'msg="rejoined with x509pop"'
grep -q 'msg="certificate expired: re-joining with x509pop" nodeId='"$NODE" node1.log ||
	fail "the expiry found at start is not logged: $(cat node1.log)"
grep -q 'msg="rejoined with x509pop" nodeId='"$NODE"' notAfter=' node1.log ||
	fail "'rejoined with x509pop' without nodeId and notAfter: $(cat node1.log)"
! grep -q 'msg="renewal failed"' node1.log || fail "an expired certificate was renewed: $(cat node1.log)"
[ "$(status_field m1 nodeId)" = "$NODE" ] || fail "the node id changed"
S1=$(status_field m1 serial)
[ "$S1" != "$S0" ] || fail "the certificate did not change"
G1=$(gen)
[ "$G1" -gt "$G0" ] || fail "identity generation $G0 -> $G1"
[ "$(cert_state "$S0")" = revoked ] || fail "the old certificate $S0 is not revoked: $(certs)"
[ "$(cert_state "$S1")" = valid ] || fail "the new certificate $S1 is not in the store: $(certs)"
[ "$(json_get '["joinedAt"]' <m1/data/identity.json)" = "$J0" ] || fail "joinedAt changed"
bc --json events list --type node.reclaimed | grep -q "$NODE" || fail "no node.reclaimed event"
# and back to renewing
wait_log node1.log 'msg=renewed nodeId='"$NODE"
stop_bcd node1.log
S2=$(status_field m1 serial)
[ "$S2" != "$S1" ] || fail "status does not show the renewal"
[ ! -e m1/data/node.key.next ] || fail "node.key.next left behind"
[ "$(stat -c %a m1/data/node.key)" = 600 ] || fail "node.key is not 0600"

# by hand: 50 hours later, bcd join --attestor x509pop
OFF=$((50 * H))
stop_server var
start_server var BC_TEST_CLOCK_OFFSET_MS=$OFF
K2=$(sha256sum <m1/data/node.key)
BC_TEST_CLOCK_OFFSET_MS=$OFF bcd join --config m1/config.toml --attestor x509pop >hand.out 2>&1 ||
	fail "bcd join --attestor x509pop: $(cat hand.out)"
grep -q "^rejoined as $NODE with x509pop; certificate until " hand.out || fail "by hand: $(cat hand.out)"
S3=$(status_field m1 serial)
[ "$S3" != "$S2" ] || fail "the manual re-join did not change the certificate"
[ "$(status_field m1 nodeId)" = "$NODE" ] || fail "the node id changed by hand"
G3=$(gen)
[ "$G3" -gt "$G1" ] || fail "identity generation $G1 -> $G3 by hand"
[ "$(cert_state "$S2")" = revoked ] || fail "by hand: $S2 not revoked: $(certs)"
[ "$(sha256sum <m1/data/node.key)" != "$K2" ] || fail "by hand: node.key did not change"
[ "$(listing m1/data)" = "ca.pem identity.json node.crt node.key pins.json " ] || fail "files: $(listing m1/data)"

# usage: no token, no --reset with x509pop; no identity at all
rc=0
bcd join --config m1/config.toml --attestor x509pop --token-file var/t1 >usage.out 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "--token-file with x509pop: exit $rc: $(cat usage.out)"
grep -q "takes no --token-file or --reset" usage.out || fail "usage: $(cat usage.out)"
bcd_machine m2
rc=0
bcd join --config m2/config.toml --attestor x509pop >none.out 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "x509pop without an identity: exit $rc"
grep -q "^bcd join: x509pop re-joins a node that joined before: no identity in $T/m2/data; join with a token$" none.out ||
	fail "without an identity: $(cat none.out)"
[ "$(listing m2/data)" = "" ] || fail "m2: something was written: $(listing m2/data)"

# 11 days later: expired more than the grace period (7 days) ago, refused
OFF=$((11 * 24 * H))
stop_server var
start_server var BC_TEST_CLOCK_OFFSET_MS=$OFF
rc=0
BC_TEST_CLOCK_OFFSET_MS=$OFF bcd join --config m1/config.toml --attestor x509pop >refused.out 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "a refused x509pop: exit $rc: $(cat refused.out)"
HINT='the control plane refused to re-join this node with its last certificate (expired more than the grace period ago, revoked, or the node was retired); join again with a new token: bcd join --reset --yes --token-file FILE'
[ "$(cat refused.out)" = "bcd join: $HINT" ] || fail "refusal by hand: $(cat refused.out)"
[ "$(status_field m1 serial)" = "$S3" ] || fail "a refused re-join changed the identity"
[ ! -e m1/data/node.key.next ] || fail "a refused re-join left node.key.next"
bc --json events list --type security.join.refused | grep -q x509pop-expired ||
	fail "no x509pop-expired refusal event"

BC_TEST_CLOCK_OFFSET_MS=$OFF BCD_RENEW_AFTER=3s BCD_RETRY_BASE=1s \
	"$BIN/bcd" node --config m1/config.toml >node2.log 2>&1 &
NODE_PID=$!
PIDS="$PIDS $NODE_PID"
wait_log node2.log 'msg="x509pop refused"' 2
grep -q 'msg="x509pop refused" nodeId='"$NODE"' attempt=1 expiresIn=-[0-9]*h' node2.log ||
	fail "no 'x509pop refused' with attempt 1: $(cat node2.log)"
grep -qF "$HINT" node2.log || fail "the refusal does not say what to do: $(cat node2.log)"
# 2 s, give or take a quarter of jitter
grep -q 'msg="x509pop refused" .*attempt=2 .*retryIn=0h00m0[12]s' node2.log ||
	fail "not retried with backoff: $(cat node2.log)"
stop_bcd node2.log
[ "$(status_field m1 serial)" = "$S3" ] || fail "a refused re-join in bcd node changed the identity"
[ ! -e m1/data/node.key.next ] || fail "bcd node's refused re-join left node.key.next"
echo "ok: $NODE re-joined with x509pop (generation $G0 -> $G1 -> $G3), renewed, refused past the grace"
