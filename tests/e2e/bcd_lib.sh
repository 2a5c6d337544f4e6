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
