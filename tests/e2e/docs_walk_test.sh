#!/usr/bin/env bash
# Walks the documented procedures against a real server: every shell block marked
# `<!-- walk NAME -->` (right before its ```sh fence) in README.md and docs/*.md runs,
# command by command, in one bash session in a temporary directory holding what
# `make run` makes there (better-compute init --dir var, on a free loopback port, and
# the server running), with build/ the build tree and its binaries on PATH, so the
# commands run exactly as written. A command exits 0 unless its line ends in
# `# fails: ...`, which must exit non-zero. tests/e2e/doc_walk.py extracts the blocks.
#
# Covered now: README.md "A tour" (tour: pools, tokens, daemon config, bcd join, nodes
# list, bcd status; second-machine: the same token refused, events list), docs/
# attestation.md "Certificates" (certificate: openssl on the node certificate) and its
# pool policy (pool-policy: pools create and update by name with --join-attestors),
# docs/commissioning.md "commission" (commission: sites create, machines commission,
# workflows list), docs/server.md "The trust bundle" (trust-bundle: pki bundle, and
# openssl verify of the tour's node certificate against it; pki-check; roles-delete:
# api-keys create --role, pools, sites and tenants delete, the name rule; rotate-all: the
# drill rotating the node CA and both join keys under the tour's machine, its bcd node
# renewing meanwhile). To cover a procedure, mark its block; when a CLI command changes,
# fix the documented command, not this walker. The walk runs in a process group of its
# own, killed afterwards: a walk stopped half way leaves no bcd node behind.
. "$(dirname "$0")/lib.sh"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
cd "$T"
PORT=$(free_port)
ln -s "$BIN" build
export PATH="$BIN:$PATH"
(cd "$SRC" && python3 tests/e2e/doc_walk.py README.md $(ls docs/*.md | sort)) >walk.sh ||
	fail "doc_walk.py: cannot extract the blocks"
# what the walk must hold at least: losing a marker is a failure too
for b in "README.md: tour" "README.md: second-machine" "docs/attestation.md: certificate" \
	"docs/attestation.md: pool-policy" "docs/commissioning.md: commission" \
	"docs/server.md: trust-bundle" "docs/server.md: pki-check" \
	"docs/server.md: roles-delete" "docs/server.md: rotate-all"; do
	grep -qF "echo '== $b'" walk.sh || fail "no walk block $b"
done
"$BIN/better-compute" init --dir var --listen "127.0.0.1:$PORT" >init.out
start_server var
walk_fail() { echo "FAIL: $1: $2: $3" >&2; exit 1; }
export -f walk_fail
# setsid: not a group leader here (no job control), so it runs bash itself, $! its group
setsid bash -c ". ./walk.sh" </dev/null >walk.out 2>&1 &
WALK=$!
rc=0
wait "$WALK" || rc=$?
kill -TERM -- "-$WALK" 2>/dev/null || true
[ "$rc" = 0 ] || { cat walk.out >&2; fail "the documented procedures do not walk (above)"; }
# what the tour says happened
"$BIN/better-compute" --json nodes list >nodes.json
[ "$(json_get '["nodes"].__len__()' <nodes.json)" = 1 ] || fail "the tour should leave one node: $(cat nodes.json)"
"$BIN/better-compute" --json events list --type security.join.refused >refused.json
grep -q token-used-up refused.json || fail "the second machine's refusal is not token-used-up: $(cat refused.json)"
stop_server var
tail -n 1 walk.out
echo "ok: the walk ran $(grep -c '^\$ ' walk.out) documented commands"
