#!/usr/bin/env bash
# Two-round tpm joins against swtpm, the server's CPU for each round apart: `make bench`
# runs this after the token joins and renewals.
#
#   BC_BINARY_DIR=build scripts/bench-tpm.sh
#
# One swtpm with a manufacturer CA of its own (scripts/swtpm.sh), a control plane on
# SQLite whose [attestors.tpm] trusts that CA and places the EK in a pool, and
# BENCH_TPM_JOINS (default 20) `bcd join --attestor tpm` one after another (the first
# joins, the others re-join as the same node after the identity is removed), each two
# rounds: the EK and AK, answered with a credential challenge, then the activated
# credential and the quote, answered with the certificate. bench/cpu_proxy.py, between
# bcd and the server, reads the server's on-CPU time around each request. Prints one
# line: tpm_joins=N round1_server_cpu_ms=.. round2_server_cpu_ms=.. join_ms=.. (the
# mean wall time of a whole bcd join, the TPM's work included). Without swtpm or
# tpm2-tools it says so and exits 77 (the tests' skip status). Loopback only, in a
# temporary directory.
set -euo pipefail
HERE=$(cd "$(dirname "$0")/../tests/e2e" && pwd)
export BC_BINARY_DIR=$(cd "${BC_BINARY_DIR:?set BC_BINARY_DIR to the build directory}" && pwd)
N=${BENCH_TPM_JOINS:-20}
# the test libraries: real processes on loopback in a temporary directory ($T); the
# last says SKIP and exits 77 without swtpm or tpm2-tools
. "$HERE/lib.sh"
. "$HERE/bcd_lib.sh"
. "$HERE/bcd_tpm_lib.sh"
cd "$T"

tpm_start tpm
EK=$(ek_hash "$TPM_PORT")
tpm_server tpm "$EK"
URL=$(sed -n 's/^public_url *= *"\(.*\)"/\1/p' var/server.toml)
python3 "$HERE/../../bench/cpu_proxy.py" "$URL" proxy.port "$SERVER_PID" rounds.txt 2>proxy.err &
PIDS="$PIDS $!"
for _ in $(seq 1 50); do [ -s proxy.port ] && break; sleep 0.1; done
[ -s proxy.port ] || fail "the proxy did not start: $(cat proxy.err)"
tpm_machine m1 "$TPM_PORT"
sed -i "s|^server = .*|server = \"http://127.0.0.1:$(cat proxy.port)\"|" m1/config.toml
start=$(date +%s%N)
for i in $(seq 1 "$N"); do
	rm -rf m1/data
	BCD_FAKEHW_TPM_KEYS=1 bcd join --config m1/config.toml --attestor tpm >join.out 2>&1 ||
		fail "tpm join $i: $(cat join.out)"
done
end=$(date +%s%N)
# rounds.txt: one Join line per round, two per join, in order
python3 - rounds.txt "$N" "$(((end - start) / 1000000))" <<'PY'
import sys
rows = [l.split() for l in open(sys.argv[1]) if l.split()[0].endswith("/Join")]
n, wall = int(sys.argv[2]), int(sys.argv[3])
if len(rows) != 2 * n or any(r[1] != "200" for r in rows):
    sys.exit("tpm: expected %d Join rounds answered 200, saw %s" % (2 * n, [r[1] for r in rows]))
r1 = [int(r[2]) for r in rows[0::2]]
r2 = [int(r[2]) for r in rows[1::2]]
print("tpm_joins=%d round1_server_cpu_ms=%.3f round2_server_cpu_ms=%.3f join_ms=%.1f"
      % (n, sum(r1) / n / 1e6, sum(r2) / n / 1e6, wall / n))
PY
