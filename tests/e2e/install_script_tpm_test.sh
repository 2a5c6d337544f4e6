#!/usr/bin/env bash
# The install script's tpm variant end to end (`better-compute daemon install-script
# --attestor tpm`): under BCD_ROOT, with a fake $BCD_ROOT/dev/tpmrm0 (the script's own
# check) and the test build's BCD_TEST_HOST_TPM naming a swtpm as this host's TPM (bcd's
# side: a test cannot make a TPM device here without the vtpm_proxy kernel module), the
# script installs bcd, joins with --attestor tpm and no token (the node bound to the
# swtpm's EK, node.key held in the TPM, the certificate carrying the AK statement), and
# (re)starts the units; run again it upgrades in place ("already joined"). With the TPM
# gone, a fresh install stops at bcd join and starts no unit. Skipped (77) without swtpm
# or tpm2-tools, and when not root (the script runs as root: bcd join opens the TPM
# itself; any other user's bcd reaches it only through bcd helper).
if [ "$(id -u)" != 0 ]; then
	echo "SKIP: needs root: the install script's bcd join opens the TPM as root"
	exit 77
fi
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bcd_lib.sh"
. "$(dirname "$0")/bcd_tpm_lib.sh"
cd "$T"

tpm_start tpmA
PORT_A=$TPM_PORT
EK_A=$(ek_hash "$PORT_A")
tpm_server tpm "$EK_A"
bc daemon install-script --attestor tpm --bcd-path "$BIN/bcd" >tpm.sh || fail "install-script failed"

cat >systemctl <<'SH'
#!/bin/sh
echo "$*" >>"$LOG"
SH
chmod +x systemctl
export LOG=$T/systemctl.log
# the user tools, faked: no user bcd yet
cat >usertool <<'SH'
#!/bin/sh
echo "$(basename "$0") $*" >>"$USERLOG"
[ "$(basename "$0") $*" = "getent passwd bcd" ] && exit 2
exit 0
SH
chmod +x usertool
for t in useradd gpasswd getent chown; do ln -s usertool "$t"; done
export USERLOG=$T/user.log USERADD=$T/useradd GPASSWD=$T/gpasswd GETENT=$T/getent CHOWN=$T/chown

ROOT=$T/root
mkdir -p "$ROOT/dev"
: >"$ROOT/dev/tpmrm0"
export BCD_TEST_HOST_TPM="swtpm:host=127.0.0.1,port=$PORT_A"
BCD_ROOT=$ROOT SYSTEMCTL=$T/systemctl sh tpm.sh </dev/null >run1.out 2>&1 || fail "tpm install: $(cat run1.out)"
NODE=$(sed -n 's/^joined as \(node_[0-9a-z]*\)$/\1/p' run1.out)
[ -n "$NODE" ] || fail "the script did not join: $(cat run1.out)"
DATA=$ROOT/var/lib/bcd
grep -q "BEGIN BCD TPM NODE KEY" "$DATA/node.key" || fail "the node key is not in the TPM"
[ "$(sql "SELECT node_id FROM node_bindings WHERE kind = 'tpm-ek' AND key = ?" "$EK_A")" = "$NODE" ] ||
	fail "$NODE is not bound to the swtpm's EK"
openssl x509 -in "$DATA/node.crt" -noout -text | grep -q "urn:bc:tpm-ak:" ||
	fail "the certificate carries no AK statement"
[ "$(cat "$LOG")" = "daemon-reload
enable bcd-helper.service bcd.service
restart bcd-helper.service
restart bcd.service" ] || fail "systemctl calls: $(cat "$LOG")"
grep -qx "chown -R bcd:bcd $DATA" user.log || fail "the data dir not given to bcd: $(cat user.log)"
grep -q "^DeviceAllow=/dev/tpmrm0 rw" "$ROOT/etc/systemd/system/bcd-helper.service" ||
	fail "bcd helper may not open the TPM"

# again: an upgrade in place, the same node, no second join
BCD_ROOT=$ROOT SYSTEMCTL=$T/systemctl sh tpm.sh </dev/null >run2.out 2>&1 || fail "tpm upgrade: $(cat run2.out)"
grep -q "already joined" run2.out || fail "the upgrade joined again: $(cat run2.out)"
grep -q "^joined as" run2.out && fail "the upgrade joined again: $(cat run2.out)"
[ "$(sql "SELECT count(*) FROM node_bindings WHERE kind = 'tpm-ek'")" = 1 ] || fail "a second binding"

# the TPM gone: a fresh install fails at bcd join and (re)starts no unit
"$SWTPM" stop "$T/tpmA" >/dev/null || fail "swtpm.sh stop"
TPMS=""
R2=$T/root2
mkdir -p "$R2/dev"
: >"$R2/dev/tpmrm0"
: >"$LOG"
if BCD_ROOT=$R2 SYSTEMCTL=$T/systemctl sh tpm.sh </dev/null >run3.out 2>&1; then
	fail "installed without its TPM: $(cat run3.out)"
fi
grep -q "install-bcd: bcd join failed (above); fix it and run this script again" run3.out ||
	fail "no join failure: $(cat run3.out)"
[ ! -s "$LOG" ] || fail "a unit was started without a join: $(cat "$LOG")"
[ ! -e "$R2/var/lib/bcd/identity.json" ] || fail "an identity without a TPM"
echo "ok: the tpm install script joined $NODE with the swtpm as this host's TPM, upgraded in place, and stopped at bcd join without it"
