#!/usr/bin/env bash
# A day of churn, compressed: `make soak` (not in `make check`).
#
#   BC_BINARY_DIR=build SOAK_MINUTES=30 scripts/soak.sh
#
# One control plane on SQLite over TLS, as deployed, in a temporary directory on
# loopback. Every minute, at a steady rate: SOAK_JOINS token joins (default 120) and a
# renewal of each node they made (bench/bc_load.c, --rate), SOAK_REFUSALS join requests
# without a credential (default 120: a token that does not exist, answered
# permission_denied and recorded as a refusal event), and SOAK_READS admin list calls
# (default 30: nodes, events and audit pages through the CLI). After each minute it
# prints the server's resident set, open file descriptors, the database's size on disk
# (the main file, and the WAL apart) and the rows of the tables that grow; at the end one line with the
# growth per operation, then `better-compute prune` with every retention at its
# shortest (events and audit older than a day do not exist yet, so the bound shown is
# what prune may delete of what this run wrote). It judges nothing: the figures are
# read by a person (docs/server.md, "A day of churn").
set -euo pipefail
HERE=$(cd "$(dirname "$0")/../tests/e2e" && pwd)
export BC_BINARY_DIR=$(cd "${BC_BINARY_DIR:?set BC_BINARY_DIR to the build directory}" && pwd)
MINUTES=${SOAK_MINUTES:-30}
JOINS=${SOAK_JOINS:-120}
REFUSALS=${SOAK_REFUSALS:-120}
READS=${SOAK_READS:-30}
# the e2e tests' library: real processes on loopback in a temporary directory ($T)
. "$HERE/lib.sh"
cd "$T"

port=$(free_port)
"$BIN/better-compute" init --dir var --listen "127.0.0.1:$port" \
	--public-url "https://127.0.0.1:$port" >/dev/null
start_server var
URL="https://127.0.0.1:$port"
"$BIN/better-compute" daemon config --out pins.json >/dev/null

# what the server holds now: rss_kb fds db_bytes, and the rows of the growing tables
sample() {
	local rss fds db wal
	rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$SERVER_PID/status")
	fds=$(ls "/proc/$SERVER_PID/fd" | wc -l)
	db=$(stat -c %s var/bc.db)
	wal=$(stat -c %s var/bc.db-wal 2>/dev/null || echo 0)
	python3 - "$rss" "$fds" "$db" "$wal" <<-'PY'
	import sqlite3, sys
	c = sqlite3.connect("file:var/bc.db?mode=ro", uri=True, timeout=30)
	rows = {t: c.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
	        for t in ("nodes", "node_certs", "events", "audit", "join_tokens")}
	print(f"rss_kb={sys.argv[1]} fds={sys.argv[2]} db_bytes={sys.argv[3]} wal_bytes={sys.argv[4]} " +
	      " ".join(f"{t}={n}" for t, n in rows.items()))
	PY
}

# n join requests whose sealed token opens to nothing (random bytes) with a real CSR:
# each refused token-unreadable and recorded as a refusal event, as a scanner's would be
refuse() {
	python3 - "$URL" var/tls-ca.pem "$1" <<-'PY'
	import http.client, os, ssl, sys, urllib.parse
	from cryptography import x509
	from cryptography.hazmat.primitives import hashes, serialization
	from cryptography.hazmat.primitives.asymmetric import ec
	from cryptography.x509.oid import NameOID
	def field(num, data):  # a length-delimited protobuf field (lengths < 2^14)
	    n = len(data)
	    ln = bytes([n]) if n < 128 else bytes([(n & 0x7f) | 0x80, n >> 7])
	    return bytes([num << 3 | 2]) + ln + data
	key = ec.generate_private_key(ec.SECP256R1())
	csr = x509.CertificateSigningRequestBuilder().subject_name(
	    x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "soak")])).sign(key, hashes.SHA256())
	der = csr.public_bytes(serialization.Encoding.DER)
	u = urllib.parse.urlparse(sys.argv[1])
	ctx = ssl.create_default_context(cafile=sys.argv[2])
	statuses = {}
	for _ in range(int(sys.argv[3])):
	    body = field(1, b"join-token") + field(3, os.urandom(120)) + field(4, der) + field(5, b"node")
	    c = http.client.HTTPSConnection(u.hostname, u.port, context=ctx, timeout=30)
	    c.request("POST", "/bettercompute.join.v1.JoinService/Join", body,
	              {"Content-Type": "application/proto"})
	    r = c.getresponse()
	    r.read()
	    statuses[r.status] = statuses.get(r.status, 0) + 1
	    c.close()
	print(" ".join(f"{k}:{v}" for k, v in sorted(statuses.items())))
	PY
}

reads() {
	for _ in $(seq 1 "$1"); do
		"$BIN/better-compute" nodes list --limit 100 >/dev/null 2>&1
		"$BIN/better-compute" events list --limit 100 >/dev/null 2>&1
		"$BIN/better-compute" audit list --limit 100 >/dev/null 2>&1
	done
}

echo "soak: $MINUTES minutes against $URL (SQLite, TLS); each minute $JOINS joins and their"
echo "renewals, $REFUSALS refusals without a credential, $READS rounds of admin list calls"
FIRST=$(sample)
echo "minute 0: $FIRST"
# the joins and then their renewals within about 45 s of each minute
RATE=$(awk -v j="$JOINS" 'BEGIN { r = int((2 * j + 44) / 45); print r < 1 ? 1 : r }')
total_ops=0
for m in $(seq 1 "$MINUTES"); do
	start=$(date +%s)
	out=$("$BIN/bc-load" --pins pins.json --database "$T/var/bc.db" --url "$URL" \
		--tokens "$JOINS" --clients 2 --renew --rate "$RATE" --server-pid "$SERVER_PID")
	admitted=$(echo "$out" | tr ' ' '\n' | sed -n 's/^admitted=//p')
	renewed=$(echo "$out" | tr ' ' '\n' | sed -n 's/^renewed=//p')
	refused=$(refuse "$REFUSALS")
	reads "$(( READS / 3 > 0 ? READS / 3 : 1 ))"
	total_ops=$(( total_ops + ${admitted:-0} + ${renewed:-0} + REFUSALS ))
	left=$(( 60 - ($(date +%s) - start) ))
	[ "$left" -le 0 ] || sleep "$left"
	kill -0 "$SERVER_PID" || fail "the server exited: $(tail -n 5 var/serve.log)"
	echo "minute $m: $(sample) joined=${admitted:-0} renewed=${renewed:-0} refusals=[$refused]"
done
LAST=$(sample)
python3 - "$FIRST" "$LAST" "$total_ops" <<-'PY'
import sys
a = dict(kv.split("=") for kv in sys.argv[1].split())
b = dict(kv.split("=") for kv in sys.argv[2].split())
ops = max(int(sys.argv[3]), 1)
d = {k: int(b[k]) - int(a[k]) for k in a}
print(f"final: {ops} joins, renewals and refusals; rss {a['rss_kb']} -> {b['rss_kb']} kB, "
      f"fds {a['fds']} -> {b['fds']}, database +{d['db_bytes']} bytes "
      f"({d['db_bytes'] / ops:.0f} per operation), events +{d['events']}, "
      f"node_certs +{d['node_certs']}, audit +{d['audit']}")
PY
# the store's own bound: what prune deletes of what this run wrote (spent tokens, and
# certificates that can no longer be used; events and audit rows are younger than any
# retention, so they stay)
"$BIN/better-compute" prune --config var/server.toml
echo "after prune: $(sample)"
