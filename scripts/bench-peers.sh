#!/usr/bin/env bash
# `make bench-peers`: our server beside step-ca and cfssl, certificate issuance over TLS,
# in one interleaved run (the peers' harness, ../shared/bench-peers/run.sh: how each peer
# is built and configured is in its README), then the table with the ratios the issue
# asks for: our TLS join to step-ca's sign, our TLS renewal to step-ca's rekey, in server
# CPU per operation (medians of the quiet phases, at most 0.2 cores of other work, when
# there are any; of all phases otherwise).
#
#   scripts/bench-peers.sh BUILD_DIR [PEERS_DIR]     (ROUNDS, N, C, PIN: as run.sh)
#
# Not in CI: it installs Go and the peers' Debian packages when missing and builds
# step-ca the first time (~2 minutes). Everything on 127.0.0.1.
set -euo pipefail
BUILD=$(cd "${1:?usage: scripts/bench-peers.sh BUILD_DIR [PEERS_DIR]}" && pwd)
PEERS=$(cd "${2:-$(dirname "$0")/../../shared/bench-peers}" && pwd)
[ -x "$PEERS/run.sh" ] || { echo "bench-peers: no run.sh in $PEERS" >&2; exit 1; }
OUT=$(mktemp /tmp/bc-bench-peers.XXXXXX)
trap 'rm -f "$OUT"' EXIT
BC_BUILD=$BUILD "$PEERS/run.sh" | tee "$OUT"
LINES=$(sed -n 's/^(lines: \(.*\))$/\1/p' "$OUT" | tail -n 1)
[ -n "$LINES" ] && [ -s "$LINES" ] || { echo "bench-peers: run.sh wrote no lines" >&2; exit 1; }
echo
echo "Quiet phases (at most 0.2 cores of other work):"
python3 "$PEERS/summarize.py" "$LINES" --max-ext 0.2 || echo "  (none quiet enough)"
# the ratios, from the medians of every phase per peer
python3 - "$LINES" <<'PY'
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    f = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
    peer = f.get("peer", "")
    for k, v in f.items():
        m = re.match(r"server_cpu_ms_per_(\w+)$", k)
        if m:
            try:
                rows.setdefault((peer, m.group(1)), []).append(float(v))
            except ValueError:
                pass
med = {k: statistics.median(v) for k, v in rows.items()}
def show(ours, theirs, label):
    if ours in med and theirs in med:
        print(f"  {label}: {med[ours]:.3f} / {med[theirs]:.3f} ms = {med[ours] / med[theirs]:.2f}x")
    else:
        print(f"  {label}: not measured")
print("Ratios, medians of all rounds (server CPU per operation):")
for k in sorted(med):
    print(f"  {k[0]:12s} {k[1]:8s} {med[k]:.3f} ms  ({len(rows[k])} rounds)")
show(("ours-tls", "join"), ("step-ca", "sign"), "our TLS join / step-ca sign")
show(("ours-tls", "renew"), ("step-ca", "rekey"), "our TLS renewal / step-ca rekey")
PY
