#!/usr/bin/env bash
# packaging/better-compute.service: `systemd-analyze verify` accepts it (with ExecStart
# pointed at the built binary, which verify requires to exist), it carries the hardening
# docs/server.md promises, keeps no capability, and the command it runs is one
# `better-compute serve` accepts: a server initialized as the unit expects starts with it
# and answers /healthz. Skipped (77) without systemd-analyze.
. "$(dirname "$0")/lib.sh"
UNIT=$(cd "$(dirname "$0")/../.." && pwd)/packaging/better-compute.service
command -v systemd-analyze >/dev/null 2>&1 || { echo "SKIP: no systemd-analyze (apt-get install systemd)"; exit 77; }
cd "$T"
mkdir units
sed "s|/usr/local/bin/better-compute|$BIN/better-compute|" "$UNIT" >units/better-compute.service
SYSTEMD_LOG_LEVEL=warning systemd-analyze verify --man=no units/better-compute.service >verify.out 2>&1 ||
	fail "systemd-analyze verify: $(cat verify.out)"
# verify warns (exit 0) about unknown directives: none may be said
grep -Ei "unknown|invalid|failed to parse|ignoring" verify.out && fail "verify warned: $(cat verify.out)"
for want in 'User=better-compute' 'StateDirectory=better-compute' 'ProtectSystem=strict' \
	'NoNewPrivileges=yes' 'SystemCallFilter=@system-service' 'PrivateDevices=yes' \
	'ProtectHome=yes' 'RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX' 'UMask=0077' \
	'MemoryDenyWriteExecute=yes'; do
	grep -qx "$want" "$UNIT" || fail "the unit lacks $want"
done
[ "$(grep -x 'CapabilityBoundingSet=.*' "$UNIT")" = "CapabilityBoundingSet=" ] ||
	fail "the unit keeps a capability: $(grep CapabilityBoundingSet "$UNIT")"
[ "$(grep -x 'AmbientCapabilities=.*' "$UNIT")" = "AmbientCapabilities=" ] || fail "ambient capabilities"
# the ExecStart line, run as written against a directory made as the header says
exec_start=$(sed -n 's/^ExecStart=//p' units/better-compute.service)
state=$(sed -n 's/^StateDirectory=//p' "$UNIT")
PORT=$(free_port)
"$BIN/better-compute" init --dir "$T/$state" --listen "127.0.0.1:$PORT" >init.out
cmd=${exec_start//\/var\/lib\/$state/$T/$state}
$cmd >serve.log 2>&1 &
PID=$!
PIDS="$PIDS $PID"
for _ in $(seq 1 100); do curl -fsS "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
curl -fsS "http://127.0.0.1:$PORT/healthz" >/dev/null || fail "the unit's ExecStart did not serve: $(cat serve.log)"
kill -TERM "$PID"; rc=0; wait "$PID" || rc=$?
[ "$rc" = 0 ] || fail "serve exited $rc after the unit's KillSignal"
echo "ok: systemd-analyze verify accepts packaging/better-compute.service ($(systemd-analyze --version | head -1)); hardened, no capability; its ExecStart serves and stops on SIGTERM"
