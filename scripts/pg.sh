#!/bin/sh
# A throwaway PostgreSQL cluster for the tests (shared/notes/POSTGRES.md).
#
#   scripts/pg.sh start DIR   initdb into DIR (new or empty), start the server on a free
#                             loopback port, socket in DIR, fsync on; print its URL,
#                             postgres://bc@127.0.0.1:PORT/postgres
#   scripts/pg.sh stop DIR    stop the server started in DIR and remove DIR
#   scripts/pg.sh run CMD...  start one in a temporary directory, run CMD with
#                             BC_TEST_POSTGRES_URL set, and stop it whatever CMD did;
#                             when PostgreSQL cannot start, say so in one line and run
#                             CMD without it. Exits with CMD's status.
#
# As root the server runs as the postgres user (PostgreSQL refuses root). Exits 3
# when the PostgreSQL server binaries are missing, 2 on a usage error, 1 otherwise.
set -eu

# The marker that makes DIR ours: stop removes nothing else.
MARK=bc-pg.url

die() {
	echo "pg.sh: $*" >&2
	exit 1
}

find_bin() {
	if [ -n "${PG_BIN:-}" ] && [ -x "$PG_BIN/initdb" ]; then
		echo "$PG_BIN"
		return 0
	fi
	# Debian keeps the server binaries off PATH, one directory per major version
	bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
	if [ -n "$bin" ] && [ -x "$bin/initdb" ] && [ -x "$bin/pg_ctl" ]; then
		echo "$bin"
		return 0
	fi
	if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
		dirname "$(command -v initdb)"
		return 0
	fi
	echo "pg.sh: the PostgreSQL server binaries (initdb, pg_ctl) are missing:" \
		"apt-get install postgresql, or set PG_BIN" >&2
	exit 3
}

# Runs a command as the user the server runs as.
as_pg() {
	if [ "$(id -u)" = 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

free_port() {
	if command -v python3 >/dev/null 2>&1; then
		python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
	else
		# no python: a random high port; a taken one fails the start, which retries
		awk 'BEGIN { srand(); print 20000 + int(rand() * 40000) }'
	fi
}

start() {
	dir=$1
	bin=$(find_bin)
	if [ "$(id -u)" = 0 ] && ! id postgres >/dev/null 2>&1; then
		echo "pg.sh: no postgres user to run the server as" >&2
		exit 3
	fi
	mkdir -p "$dir"
	[ -z "$(ls -A "$dir")" ] || die "$dir is not empty"
	dir=$(cd "$dir" && pwd)
	# first, so that stop cleans up after a start that fails
	: >"$dir/$MARK"
	if [ "$(id -u)" = 0 ]; then
		chown postgres "$dir"
	fi
	as_pg "$bin/initdb" -D "$dir/data" -A trust -U bc -E UTF8 --locale=C --no-sync \
		>"$dir/initdb.log" 2>&1 || die "initdb failed: see $dir/initdb.log"
	# a port found free may be taken before the server binds it: try a few
	for _ in 1 2 3 4 5; do
		port=$(free_port)
		if as_pg "$bin/pg_ctl" -D "$dir/data" -l "$dir/log" -w -t 60 \
			-o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=on -c max_connections=300" \
			start >/dev/null 2>&1; then
			url="postgres://bc@127.0.0.1:$port/postgres"
			echo "$url" >"$dir/$MARK"
			echo "$url"
			return 0
		fi
	done
	die "the server did not start: see $dir/log"
}

stop() {
	dir=$1
	[ -d "$dir" ] || return 0
	if [ ! -f "$dir/$MARK" ] && [ ! -f "$dir/data/PG_VERSION" ] && [ -n "$(ls -A "$dir")" ]; then
		die "$dir was not made by pg.sh start: not removing it"
	fi
	if [ -f "$dir/data/postmaster.pid" ]; then
		bin=$(find_bin)
		as_pg "$bin/pg_ctl" -D "$dir/data" -m fast -w -t 60 stop >/dev/null 2>&1 ||
			echo "pg.sh: pg_ctl stop failed in $dir" >&2
	fi
	rm -rf "$dir"
}

run() {
	dir=$(mktemp -d "${TMPDIR:-/tmp}/bc-pg.XXXXXX")
	log=$(mktemp "${TMPDIR:-/tmp}/bc-pg-start.XXXXXX")
	trap 'stop "$dir"; rm -f "$log"' EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	if url=$(start "$dir" 2>"$log"); then
		BC_TEST_POSTGRES_URL=$url
		export BC_TEST_POSTGRES_URL
		echo "pg.sh: PostgreSQL for the tests at $url"
	else
		echo "pg.sh: PostgreSQL did not start ($(tail -n 1 "$log")): the suite runs on SQLite only"
	fi
	rc=0
	"$@" || rc=$?
	exit "$rc"
}

usage() {
	echo "usage: pg.sh start DIR | stop DIR | run CMD..." >&2
	exit 2
}

[ $# -ge 2 ] || usage
case $1 in
start) start "$2" ;;
stop) stop "$2" ;;
run)
	shift
	run "$@"
	;;
*) usage ;;
esac
