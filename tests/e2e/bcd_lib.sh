# Shared by the bcd end-to-end tests (source it after lib.sh): a control plane, a
# pool, and bcd configs written by `daemon config --bcd-dir` with [fakehw] claims.
bc() { "$BIN/better-compute" "$@"; }
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bcd() { "$BIN/bcd" "$@"; }

# bcd_server DIR [TOML]: init and serve a control plane in DIR, TOML (such as
# "[attestors.provisioned]") appended to its server.toml
bcd_server() {
	local dir=$1 port
	port=$(free_port)
	"$BIN/better-compute" init --dir "$dir" --listen "127.0.0.1:$port" >"$dir.init.out"
	[ -z "${2:-}" ] || printf '\n%s\n' "$2" >>"$dir/server.toml"
	start_server "$dir"
}

# bcd_machine NAME [UUID]: NAME/config.toml, NAME/ca.pem, NAME/claims.json, NAME/data
bcd_machine() {
	local name=$1 uuid=${2:-6b1d0c3e-aaaa-4000-8000-$(printf '%012d' $RANDOM)}
	bc daemon config --bcd-dir "$T/$name" --data-dir "$T/$name/data" >/dev/null
	cat >"$T/$name/claims.json" <<JSON
{"product_uuid":"$uuid","serial":"SN-$name","macs":["02:00:00:00:00:01"],"hostname":"$name","arch":"x86_64"}
JSON
	printf '\n[fakehw]\nclaims = "claims.json"\n' >>"$T/$name/config.toml"
}

# a node token for the pool web into FILE; extra arguments go to tokens create
new_token() {
	local file=$1; shift
	bc tokens create --role node --pool web --out "$file" "$@" >/dev/null
}

# the listing of a data directory, to show nothing was written
listing() { (cd "$1" 2>/dev/null && ls -A | sort | tr '\n' ' ') || true; }

# status_field NAME FIELD
status_field() { bcd status --json --config "$T/$1/config.toml" | json_get "[\"$2\"]"; }

# node_renewing NAME LOG: bcd node for NAME, renewing every second (and retrying after
# a second), in the background, its log LOG, its pid NODE_PID (in PIDS); back once it
# renewed, within 30 s
node_renewing() {
	local name=$1 log=$2 s0
	s0=$(status_field "$name" serial)
	BCD_RENEW_AFTER=1s BCD_RETRY_BASE=1s "$BIN/bcd" node --config "$T/$name/config.toml" >"$log" 2>&1 &
	NODE_PID=$!
	PIDS="$PIDS $NODE_PID"
	for _ in $(seq 1 300); do
		[ "$(status_field "$name" serial)" != "$s0" ] && return 0
		kill -0 "$NODE_PID" 2>/dev/null || fail "bcd node exited: $(cat "$log")"
		sleep 0.1
	done
	fail "no renewal within 30 s: $(cat "$log")"
}

# site_serve NAME SITE_ID [LINES]: NAME, a joined site node, serves SITE_ID's boot
# scripts with bcd site (unknown machines welcome; LINES more of its [site] table) on a
# free port, BOOT_PORT, its log NAME.log, its pid SITE_PID (in PIDS); back once it
# holds the site's lease, within 30 s
site_serve() {
	local name=$1 i
	BOOT_PORT=$(free_port)
	cat >>"$T/$name/config.toml" <<TOML

[site]
id = "$2"
listen = "127.0.0.1:$BOOT_PORT"
kernel = "http://boot.example/vmlinuz"
initrd = "http://boot.example/initrd.img"
cmdline = "console=ttyS0"
unknown_machines = "true"
${3:-}
TOML
	"$BIN/bcd" site --config "$T/$name/config.toml" 2>"$T/$name.log" &
	SITE_PID=$!
	PIDS="$PIDS $SITE_PID"
	for i in $(seq 1 300); do grep -q "lease held" "$T/$name.log" && return 0; sleep 0.1; done
	fail "the site node $name took no lease: $(cat "$T/$name.log")"
}

# boot_cmdline FILE: the kernel command line, printed, of FILE, an iPXE script that
# site_serve's boot server rendered; a discovery token and assertion on it, or the test
# fails
boot_cmdline() {
	grep -q '^#!ipxe' "$1" || fail "not an iPXE script: $(cat "$1")"
	grep -q '^kernel .* bc.token=bct_tok_.* bc.assertion=' "$1" ||
		fail "no token and assertion on the kernel command line: $(cat "$1")"
	sed -n 's/^kernel [^ ]* //p' "$1"
}

# user_data_files DIR USER_DATA: what cloud-init would write of a deploy's user data
# (bc machines deploy --out) into DIR: config.toml, ca.pem and provisioned.token
user_data_files() {
	mkdir -p "$1"
	python3 - "$1" "$2" <<'PY'
import sys
out, path = sys.argv[1], sys.argv[2]
files, cur = {}, None
for line in open(path):
    line = line.rstrip("\n")
    if line.startswith("  - path: "):
        cur = line[len("  - path: "):]
        files[cur] = []
    elif cur and line.startswith("      "):
        files[cur].append(line[6:])
    elif not line.startswith("    "):
        cur = None
for k, v in {"/etc/bcd/config.toml": "config.toml", "/etc/bcd/ca.pem": "ca.pem",
             "/etc/bcd/provisioned.token": "provisioned.token"}.items():
    with open(out + "/" + v, "w") as f:
        f.write("\n".join(files[k]) + "\n")
PY
}
