#!/usr/bin/env bash
# Crash consistency on PostgreSQL: the server killed with SIGKILL during concurrent
# joins, five times. Every join answered 200 is a node with exactly that certificate,
# no token was spent beyond its uses (uses spent = nodes made), and every index of the
# store passes amcheck's bt_index_check (where the amcheck extension is installed).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pg_lib.sh"
. "$(dirname "$0")/crash_lib.sh"
cd "$T"
PORT=$(free_port)
init_on_pg var "$PORT"
start_server var
crash_setup
crash_rounds 5 12
stop_server var
check_consistency sql
if sql "CREATE EXTENSION IF NOT EXISTS amcheck" >/dev/null 2>&1; then
	n=$(sql "SELECT COUNT(bt_index_check(c.oid)) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
	        JOIN pg_am a ON a.oid = c.relam JOIN pg_namespace s ON s.oid = c.relnamespace
	        WHERE a.amname = 'btree' AND s.nspname = 'public'") || fail "amcheck found a damaged index"
	echo "amcheck: $n indexes checked"
else
	echo "amcheck is not installed: indexes not checked"
fi
echo "ok: five SIGKILLs during joins, the store consistent"
