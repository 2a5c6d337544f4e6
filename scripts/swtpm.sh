#!/bin/sh
# A throwaway swtpm for the tests (shared/notes/TPM.md), with a manufacturer CA of its own.
#
#   scripts/swtpm.sh start DIR   a private swtpm_localca CA in DIR/ca, swtpm_setup with an
#                                EK certificate (RSA at 0x01C00002, ECC P-384 at 0x01C00016)
#                                and a platform certificate, then swtpm on a free loopback
#                                port P (its control channel on P+1, as the swtpm TCTI
#                                wants); prints "P CA_ROOT_PEM_PATH"
#   scripts/swtpm.sh stop DIR    stop the swtpm started in DIR and remove DIR
#
# TCTI for the TPM started: swtpm:host=127.0.0.1,port=P. The chain of its EK
# certificate: CA_ROOT_PEM_PATH -> DIR/ca/issuercert.pem -> the EK certificate.
# Exits 3 when swtpm, swtpm_setup or swtpm_localca is missing, 2 on a usage error,
# 1 otherwise. Works as root: the CA lives in DIR, never in /var/lib/swtpm-localca.
set -eu

# The marker that makes DIR ours: stop removes nothing else.
MARK=bc-swtpm.port

die() {
	echo "swtpm.sh: $*" >&2
	exit 1
}

need() {
	for b in swtpm swtpm_setup swtpm_localca; do
		if ! command -v "$b" >/dev/null 2>&1; then
			echo "swtpm.sh: $b is missing: apt-get install swtpm swtpm-tools" >&2
			exit 3
		fi
	done
}

# A port P with P+1 free too, both as free as a bind can tell; a race lost is retried.
free_port() {
	if command -v python3 >/dev/null 2>&1; then
		python3 -c 'import random, socket
for _ in range(200):
    p = random.randrange(20000, 60000, 2)
    try:
        a = socket.socket(); a.bind(("127.0.0.1", p))
        b = socket.socket(); b.bind(("127.0.0.1", p + 1))
    except OSError:
        continue
    a.close(); b.close()
    print(p)
    break'
	else
		awk 'BEGIN { srand(); print 2 * int(10000 + rand() * 20000) }'
	fi
}

start() {
	dir=$1
	need
	mkdir -p "$dir"
	[ -z "$(ls -A "$dir")" ] || die "$dir is not empty"
	dir=$(cd "$dir" && pwd)
	# first, so that stop cleans up after a start that fails
	: >"$dir/$MARK"
	mkdir -p "$dir/ca" "$dir/state"
	cat >"$dir/swtpm_setup.conf" <<EOF
create_certs_tool = $(command -v swtpm_localca)
create_certs_tool_config = $dir/swtpm-localca.conf
create_certs_tool_options = $dir/swtpm-localca.options
EOF
	cat >"$dir/swtpm-localca.conf" <<EOF
statedir = $dir/ca
signingkey = $dir/ca/signkey.pem
issuercert = $dir/ca/issuercert.pem
certserial = $dir/ca/certserial
EOF
	cat >"$dir/swtpm-localca.options" <<EOF
--platform-manufacturer Test
--platform-version 2.1
--platform-model Test
EOF
	swtpm_setup --tpm2 --tpmstate "$dir/state" --create-ek-cert --create-platform-cert \
		--config "$dir/swtpm_setup.conf" --overwrite >"$dir/setup.log" 2>&1 ||
		die "swtpm_setup failed: see $dir/setup.log"
	root=$dir/ca/swtpm-localca-rootca-cert.pem
	[ -f "$root" ] || die "swtpm_localca made no root certificate: see $dir/setup.log"
	for _ in 1 2 3 4 5; do
		port=$(free_port)
		rm -f "$dir/swtpm.pid"
		if swtpm socket --tpm2 --tpmstate "dir=$dir/state" \
			--server "type=tcp,port=$port,bindaddr=127.0.0.1" \
			--ctrl "type=tcp,port=$((port + 1)),bindaddr=127.0.0.1" \
			--flags not-need-init,startup-clear --daemon --pid "file=$dir/swtpm.pid" \
			--log "file=$dir/swtpm.log" 2>>"$dir/swtpm.log" && [ -s "$dir/swtpm.pid" ]; then
			echo "$port" >"$dir/$MARK"
			echo "$port $root"
			return 0
		fi
	done
	die "swtpm did not start: see $dir/swtpm.log"
}

stop() {
	dir=$1
	[ -d "$dir" ] || return 0
	if [ ! -f "$dir/$MARK" ] && [ -n "$(ls -A "$dir")" ]; then
		die "$dir was not made by swtpm.sh start: not removing it"
	fi
	if [ -s "$dir/swtpm.pid" ]; then
		pid=$(cat "$dir/swtpm.pid")
		# only the swtpm this DIR started: its pid file names it
		if kill "$pid" 2>/dev/null; then
			for _ in 1 2 3 4 5 6 7 8 9 10; do
				kill -0 "$pid" 2>/dev/null || break
				sleep 0.2
			done
		fi
	fi
	rm -rf "$dir"
}

usage() {
	echo "usage: swtpm.sh start DIR | stop DIR" >&2
	exit 2
}

[ $# -eq 2 ] || usage
case $1 in
start) start "$2" ;;
stop) stop "$2" ;;
*) usage ;;
esac
