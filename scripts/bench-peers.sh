#!/usr/bin/env bash
# `make bench-peers`: our server beside step-ca and cfssl, certificate issuance over TLS,
# in one interleaved run (the peers' harness, ../shared/bench-peers/run.sh: how each peer
# is built and configured is in its README). It prints the table of every phase with the
# ratios the issue asks for (our TLS join to step-ca's sign, our TLS renewal to step-ca's
# rekey, server CPU per operation: medians, and paired within each round), then the same
# for the quiet phases (at most 0.2 cores of other work), when there are any.
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
# run.sh's summary still names our TLS by the library the server had when it was
# written: ours is OpenSSL's now
BC_BUILD=$BUILD "$PEERS/run.sh" | sed 's/TLS 1\.3 (GnuTLS)/TLS 1.3 (OpenSSL)/' | tee "$OUT"
LINES=$(sed -n 's/^(lines: \(.*\))$/\1/p' "$OUT" | tail -n 1)
[ -n "$LINES" ] && [ -s "$LINES" ] || { echo "bench-peers: run.sh wrote no lines" >&2; exit 1; }
echo
echo "The same, the quiet phases only (at most 0.2 cores of other work):"
python3 "$PEERS/summarize.py" "$LINES" --max-ext 0.2 2>/dev/null |
	sed 's/TLS 1\.3 (GnuTLS)/TLS 1.3 (OpenSSL)/' || echo "  (no phase was quiet enough)"
