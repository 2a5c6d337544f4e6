# Shared by the bcd TPM end-to-end tests (source it after lib.sh and bcd_lib.sh): swtpm
# instances through scripts/swtpm.sh, each with a manufacturer CA of its own, and a
# control plane whose [attestors.tpm] trusts them. Skips (77) without swtpm or
# tpm2-tools.
SWTPM="$HERE/../../scripts/swtpm.sh"
for b in swtpm swtpm_setup swtpm_localca tpm2_createek tpm2_flushcontext tpm2_clear; do
	command -v "$b" >/dev/null 2>&1 || { echo "SKIP: $b is missing"; exit 77; }
done

TPMS=""
EXTRA_CLEANUP=""
stop_tpms() {
	for d in $TPMS; do "$SWTPM" stop "$d" >/dev/null 2>&1 || true; done
	[ -z "$EXTRA_CLEANUP" ] || eval "$EXTRA_CLEANUP" || true
	cleanup
}
trap stop_tpms EXIT

# tpm_start NAME: a swtpm in $T/NAME; sets TPM_PORT and TPM_ROOT
tpm_start() {
	local out rc=0
	out=$("$SWTPM" start "$T/$1") || rc=$?
	[ "$rc" != 3 ] || { echo "SKIP: swtpm cannot start"; exit 77; }
	[ "$rc" = 0 ] || fail "swtpm.sh start $1 exited $rc"
	TPMS="$TPMS $T/$1"
	TPM_PORT=${out%% *}
	TPM_ROOT=${out#* }
}

# tpm_tool PORT CMD ARGS...: a tpm2-tools command against the swtpm at PORT
tpm_tool() {
	local port=$1; shift
	TSS2_LOG=all+none TPM2TOOLS_TCTI="swtpm:host=127.0.0.1,port=$port" "$@"
}

# ek_hash PORT: hex sha256 of the RSA EK's TPMT_PUBLIC, by tpm2-tools (not by bcd)
ek_hash() {
	tpm_tool "$1" tpm2_createek -c "$T/ek.ctx" -G rsa -u "$T/ek.pub" >/dev/null
	tpm_tool "$1" tpm2_flushcontext -t >/dev/null
	python3 -c 'import hashlib,sys; d=open(sys.argv[1],"rb").read(); print(hashlib.sha256(d[2:]).hexdigest())' "$T/ek.pub"
}

# tpm_machine NAME PORT: a bcd machine whose [fakehw] TPM is the swtpm at PORT
tpm_machine() {
	bcd_machine "$1"
	printf 'tpm = "swtpm:host=127.0.0.1,port=%s"\n' "$2" >>"$T/$1/config.toml"
}

# sql QUERY ARG...: one value from the store
sql() {
	python3 - "$T/var/bc.db" "$@" <<'PY'
import sqlite3, sys
db = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True)
row = db.execute(sys.argv[2], tuple(sys.argv[3:])).fetchone()
print(row[0] if row else "")
PY
}

# tpm_server POOLNAME EK_HASH... : a control plane in $T/var with a pool (POOL) that
# resolve.toml places every EK_HASH in, and [attestors.tpm] trusting the CAs of the
# swtpms started so far (started before this call)
tpm_server() {
	local pool=$1 roots="" d; shift
	bc init --dir "$T/var" --listen "127.0.0.1:$(free_port)" >"$T/var.init.out"
	start_server "$T/var"
	bc pools create web >/dev/null
	POOL=$(bc --json pools create "$pool" | json_get '["id"]')
	SITE=$(bc --json sites create lab | json_get '["id"]')
	stop_server "$T/var"
	: >"$T/resolve.toml"
	for e in "$@"; do printf '[ek.%s]\ntenant = "root"\npool = "%s"\n' "$e" "$POOL" >>"$T/resolve.toml"; done
	for d in $TPMS; do roots="$roots\"$d/ca/swtpm-localca-rootca-cert.pem\", \"$d/ca/issuercert.pem\", "; done
	cat >>"$T/var/server.toml" <<TOML

[attestors.tpm]
ek_roots = [${roots%, }]
resolve = "$T/resolve.toml"
TOML
	start_server "$T/var"
}

# wait_log FILE PATTERN COUNT PID: until FILE has COUNT lines matching PATTERN (60 s)
wait_log() {
	local n
	for _ in $(seq 1 600); do
		n=$(grep -c "$2" "$1" || true)
		[ "$n" -ge "$3" ] && return 0
		kill -0 "$4" 2>/dev/null || fail "process $4 exited: $(tail -5 "$1")"
		sleep 0.1
	done
	fail "no $3 x '$2' in $1: $(tail -5 "$1")"
}
