#!/usr/bin/env bash
# `better-compute daemon install-script`: the script it prints, run under a prefix
# (BCD_ROOT) with a fake systemctl, installs bcd, its config, CA and unit, joins with
# the token from standard input, and (re)starts the unit; run again without a token
# it upgrades in place ("already joined"). The tpm variant fails early without
# /dev/tpmrm0, having installed nothing; the provisioned variant without --token-file
# too, and with one it joins with --attestor provisioned. --data-dir is the units'
# ReadWritePaths and, under BCD_ROOT, the config's data_dir; --bcd-url is https only
# (exit 2 otherwise) and needs the binary's SHA-256 (--bcd-sha256, or --bcd-file to
# hash a local copy); a binary whose hash differs is refused and nothing installed.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bcd_lib.sh"
cd "$T"
bcd_server var "[attestors.provisioned]"
bc pools create web >/dev/null
ROOT=$T/root
mkdir -p "$ROOT"
SUM=$(sha256sum <"$BIN/bcd" | cut -d' ' -f1)
bc daemon install-script --bcd-path "$BIN/bcd" --bcd-file "$BIN/bcd" --data-dir /srv/bcd >install.sh ||
	fail "install-script failed"
grep -qx "BCD_SHA256='$SUM'" install.sh || fail "--bcd-file did not pin the binary's SHA-256"
head -1 install.sh | grep -qx '#!/bin/sh' || fail "not a sh script"
sh -n install.sh || fail "the script does not parse"
usage() { # usage ARGS...: install-script refuses them with exit 2 and prints no script
	local rc=0
	bc daemon install-script "$@" >bad.sh 2>bad.out || rc=$?
	[ "$rc" = 2 ] || fail "install-script $* exited $rc: $(cat bad.out)"
	[ ! -s bad.sh ] || fail "a refused install-script printed a script"
}
# https only, loopback http included: the download must be authenticated
for u in http://example.com/bcd http://localhost/bcd http://127.0.0.1:9/bcd http://[::1]:9/bcd \
	ftp://example.com/bcd https:// x; do
	usage --bcd-url "$u" --bcd-sha256 "$SUM"
	grep -q -- "--bcd-url: an https:// URL" bad.out || fail "$u: $(cat bad.out)"
done
# a download needs its pin
usage --bcd-url https://example.com/bcd
grep -q -- "--bcd-url needs the binary's pin: --bcd-sha256 HEX or --bcd-file FILE" bad.out ||
	fail "no pin: $(cat bad.out)"
usage --bcd-url https://example.com/bcd --bcd-sha256 abc
grep -q -- "--bcd-sha256: 64 hex digits" bad.out || fail "short pin: $(cat bad.out)"
usage --bcd-url https://example.com/bcd --bcd-sha256 "$SUM" --bcd-file "$BIN/bcd"
usage --bcd-url https://example.com/bcd --bcd-file "$T/nowhere"
grep -q -- "--bcd-file $T/nowhere: cannot read it" bad.out || fail "missing --bcd-file: $(cat bad.out)"
usage --bcd-path "$BIN/bcd" --data-dir "/srv/b|cd"
grep -q -- "--data-dir: letters, digits and ._/+- only" bad.out || fail "--data-dir b|cd: $(cat bad.out)"
# --audience goes into the config the script writes: refused with aws (its documents
# carry none) and held to plain() with gcp and oidc, so no quote or newline can add a
# table to the config
INJECTED=$(printf '"\n[injected]\nk = "v')
usage --bcd-path "$BIN/bcd" --attestor cloud-iid --provider aws --audience "$INJECTED"
grep -q -- "--provider aws takes no --audience" bad.out || fail "aws audience: $(cat bad.out)"
usage --bcd-path "$BIN/bcd" --attestor cloud-iid --provider aws --audience https://bc.example.com
grep -q -- "--provider aws takes no --audience" bad.out || fail "aws audience: $(cat bad.out)"
for p in gcp oidc; do
	usage --bcd-path "$BIN/bcd" --attestor cloud-iid --provider "$p" --audience "$INJECTED"
	grep -q -- "--provider gcp and oidc: --audience A" bad.out || fail "$p audience: $(cat bad.out)"
done
# the attestor is one of bcd's that a first join uses (its table), and the message lists
# them all
for a in nosuch x509pop discovery; do
	usage --bcd-path "$BIN/bcd" --attestor "$a"
	grep -q -- "--attestor: one of join-token, tpm, provisioned, cloud-iid" bad.out ||
		fail "attestor $a: $(cat bad.out)"
done
UPPER=$(echo "$SUM" | tr a-f A-F)
bc daemon install-script --bcd-url https://example.com/bcd --bcd-sha256 "$UPPER" >good.sh 2>good.out ||
	fail "https refused: $(cat good.out)"
grep -qx "BCD_SHA256='$SUM'" good.sh || fail "the pin is not lower-case hex in the script"
grep -q "curl -fsSL --proto '=https' --proto-redir '=https' " good.sh ||
	fail "the download may use or follow plain http"

cat >systemctl <<'SH'
#!/bin/sh
echo "$*" >>"$LOG"
SH
chmod +x systemctl
export LOG=$T/systemctl.log
# the user tools, faked: no user bcd yet, and an older script put it in the tss group
cat >usertool <<'SH'
#!/bin/sh
echo "$(basename "$0") $*" >>"$USERLOG"
case "$(basename "$0") $*" in
"getent passwd bcd") exit 2 ;;
"getent group tss") echo "tss:x:117:bcd,other" ;;
esac
exit 0
SH
chmod +x usertool
for t in useradd gpasswd getent chown; do ln -s usertool "$t"; done
export USERLOG=$T/user.log USERADD=$T/useradd GPASSWD=$T/gpasswd GETENT=$T/getent CHOWN=$T/chown

new_token var/t1
# the join inside the script reads this machine's own claims (/sys, uname)
BCD_ROOT=$ROOT SYSTEMCTL=$T/systemctl sh install.sh <var/t1 >run1.out 2>&1 || fail "install: $(cat run1.out)"
[ -x "$ROOT/usr/local/bin/bcd" ] || fail "bcd not installed"
cmp -s "$ROOT/usr/local/bin/bcd" "$BIN/bcd" || fail "bcd is not the given binary"
grep -q '^ca_bundle = "ca.pem"' "$ROOT/etc/bcd/config.toml" || fail "no config.toml"
grep -q "BEGIN CERTIFICATE" "$ROOT/etc/bcd/ca.pem" || fail "no ca.pem"
grep -q "^ExecStart=/usr/local/bin/bcd node --config /etc/bcd/config.toml" \
	"$ROOT/etc/systemd/system/bcd.service" || fail "no unit"
# --data-dir: the unit's ReadWritePaths (the machine's path), the config's data_dir (under
# BCD_ROOT, where the script's own bcd join wrote the identity)
grep -qx "ReadWritePaths=/srv/bcd" "$ROOT/etc/systemd/system/bcd.service" ||
	fail "the unit lost --data-dir: $(grep ReadWritePaths "$ROOT/etc/systemd/system/bcd.service")"
grep -qx "data_dir = \"$ROOT/srv/bcd\"" "$ROOT/etc/bcd/config.toml" ||
	fail "the config's data_dir is not under BCD_ROOT: $(grep data_dir "$ROOT/etc/bcd/config.toml")"
[ -f "$ROOT/srv/bcd/identity.json" ] || fail "no identity in $ROOT/srv/bcd: $(ls -R "$ROOT")"
[ ! -e "$ROOT/var/lib/bcd" ] || fail "the default data directory was made too"
diff <(grep -v '^#' "$ROOT/etc/systemd/system/bcd.service" | grep -v '^Documentation=') \
	<(grep -v '^#' "$BC_SOURCE_DIR/packaging/bcd.service" | grep -v '^Documentation=' |
		sed 's|^ReadWritePaths=.*|ReadWritePaths=/srv/bcd|') >/dev/null ||
	fail "the embedded unit differs from packaging/bcd.service"
grep -q "^joined as node_" run1.out || fail "the script did not join: $(cat run1.out)"
NODE=$(sed -n 's/^joined as \(node_[0-9a-z]*\)$/\1/p' run1.out)
[ "$(cat "$LOG")" = "daemon-reload
enable bcd-helper.service bcd.service
restart bcd-helper.service
restart bcd.service" ] || fail "systemctl calls: $(cat "$LOG")"
# bcd node runs as the user bcd, out of the tss group, through bcd helper
grep -qx "useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin bcd" user.log ||
	fail "no useradd: $(cat user.log)"
grep -qx "gpasswd -d bcd tss" user.log || fail "bcd not taken out of tss: $(cat user.log)"
grep -qx "chown -R bcd:bcd $ROOT/srv/bcd" user.log || fail "the data dir not given to bcd: $(cat user.log)"
grep -q "^User=bcd$" "$ROOT/etc/systemd/system/bcd.service" || fail "bcd.service does not run as bcd"
grep -q "^DeviceAllow" "$ROOT/etc/systemd/system/bcd.service" && fail "bcd.service may open a device"
grep -q "^ExecStart=/usr/local/bin/bcd helper --config /etc/bcd/config.toml" \
	"$ROOT/etc/systemd/system/bcd-helper.service" || fail "no helper unit"
diff <(grep -v '^#' "$ROOT/etc/systemd/system/bcd-helper.service" | grep -v '^Documentation=') \
	<(grep -v '^#' "$BC_SOURCE_DIR/packaging/bcd-helper.service" | grep -v '^Documentation=') >/dev/null ||
	fail "the embedded helper unit differs from packaging/bcd-helper.service"
printf '[helper]\nsocket = "/run/bcd/helper.sock"\nuser = "bcd"\n' >helper.want
grep -A2 '^\[helper\]' "$ROOT/etc/bcd/config.toml" | diff - helper.want >/dev/null ||
	fail "no [helper] in the config: $(cat "$ROOT/etc/bcd/config.toml")"
[ "$(stat -c %a "$ROOT/srv/bcd")" = 700 ] || fail "data dir is not 0700"
"$ROOT/usr/local/bin/bcd" status --config "$ROOT/etc/bcd/config.toml" | grep -q "$NODE" || fail "status"
ls -A "$ROOT/etc/bcd" | grep -q '\.new\.' && fail "temporary files left in /etc/bcd"

# again, without a token: an upgrade
: >"$LOG"
BCD_ROOT=$ROOT SYSTEMCTL=$T/systemctl sh install.sh </dev/null >run2.out 2>&1 || fail "upgrade: $(cat run2.out)"
grep -qx "already joined as $NODE" run2.out || fail "upgrade did not keep the identity: $(cat run2.out)"
grep -q "restart bcd.service" "$LOG" || fail "upgrade did not restart the unit"

# the token from --token-file, on a fresh root
new_token var/t2
R2=$T/root2
mkdir -p "$R2"
bc daemon install-script --bcd-path "$BIN/bcd" >install2.sh
# (the same /sys claims as the first: joined, or refused as a reclaim when this host
# reports a hardware key; either way the token came from the file)
BCD_ROOT=$R2 SYSTEMCTL=true sh install2.sh --token-file var/t2 </dev/null >run3.out 2>&1 || true
grep -q "join refused by the server (permission_denied)\|^joined as" run3.out ||
	fail "--token-file not used: $(cat run3.out)"

# a binary whose SHA-256 is not the pinned one: refused, removed, nothing installed over
R5=$T/root5
mkdir -p "$R5"
bc daemon install-script --bcd-path "$BIN/bcd" --bcd-sha256 "$(printf '%064d' 0)" >pin.sh
rc=0; BCD_ROOT=$R5 SYSTEMCTL=$T/systemctl sh pin.sh <var/t2 >pin.out 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "a binary of another hash installed (exit $rc): $(cat pin.out)"
grep -q "refusing to install bcd from $BIN/bcd: its SHA-256 is $SUM, not the pinned 0000" pin.out ||
	fail "hash refusal: $(cat pin.out)"
[ ! -e "$R5/usr/local/bin/bcd" ] || fail "the refused binary was installed"
ls -A "$R5/usr/local/bin" | grep -q . && fail "the refused binary was left: $(ls -A "$R5/usr/local/bin")"
[ ! -e "$R5/etc/bcd/config.toml" ] || fail "the refused install wrote its config"

# a BCD_ROOT the script cannot put into its config and unit as it is: exit 2, nothing made
rc=0; BCD_ROOT="$T/root 6" SYSTEMCTL=true sh install.sh <var/t2 >root6.out 2>&1 || rc=$?
[ "$rc" = 2 ] && grep -q "install-bcd: the data directory $T/root 6/srv/bcd (BCD_ROOT and --data-dir)" root6.out ||
	fail "BCD_ROOT with a space: $rc $(cat root6.out)"
[ ! -e "$T/root 6" ] || fail "BCD_ROOT with a space made something"

# tpm: no TPM under the root: fails before installing anything
bc daemon install-script --attestor tpm --bcd-path "$BIN/bcd" >tpm.sh
R3=$T/root3
mkdir -p "$R3"
if BCD_ROOT=$R3 SYSTEMCTL=true sh tpm.sh </dev/null >tpm.out 2>&1; then fail "tpm script ran without a TPM"; fi
grep -q "no TPM at $R3/dev/tpmrm0" tpm.out || fail "tpm failure: $(cat tpm.out)"
[ -z "$(ls -A "$R3")" ] || fail "the tpm script installed something: $(ls -R "$R3")"

# provisioned: the token only from --token-file, checked before anything is installed
bc daemon install-script --attestor provisioned --bcd-path "$BIN/bcd" >prov.sh
R4=$T/root4
mkdir -p "$R4"
if BCD_ROOT=$R4 SYSTEMCTL=true sh prov.sh <var/t2 >prov.out 2>&1; then fail "provisioned script ran without --token-file"; fi
grep -q "reads its single-use token from --token-file FILE" prov.out || fail "provisioned failure: $(cat prov.out)"
[ -z "$(ls -A "$R4")" ] || fail "the provisioned script installed something: $(ls -R "$R4")"
# with one: bcd joins with the provisioned attestor (this host's own product UUID is not
# the token's, or unreadable: refused by one of that attestor's reasons)
bc tokens create --role provisioned --pool web --expect-product-uuid 6b1d0c3e-aaaa-4000-8000-0000000000ff \
	--out var/tp >/dev/null
BCD_ROOT=$R4 SYSTEMCTL=true sh prov.sh --token-file var/tp </dev/null >prov2.out 2>&1 || true
grep -q "join refused by the server (permission_denied)" prov2.out || fail "provisioned join: $(cat prov2.out)"
bc --json events list --type security.join.refused --limit 1 >prov.events
grep -q '"attestor": *"provisioned"' prov.events || fail "not a provisioned join: $(cat prov.events)"
grep -Eq '"reason": *"(no-product-uuid|product-uuid-mismatch)"' prov.events || fail "reason: $(cat prov.events)"
echo "ok: installed and joined $NODE, upgraded in place, tpm and provisioned variants failed early"
