#!/usr/bin/env bash
# Crash consistency on SQLite: the server killed with SIGKILL during concurrent joins,
# five times. Every join answered 200 is a node with exactly that certificate, no
# token was spent beyond its uses (uses spent = nodes made), and the database passes
# PRAGMA integrity_check.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/crash_lib.sh"
cd "$T"
PORT=$(free_port)
bc init --dir var --listen "127.0.0.1:$PORT" >init.out
start_server var
crash_setup
crash_rounds 5 12
stop_server var
q() { sqlite3 -batch -noheader var/bc.db "$1"; }
check_consistency q
[ "$(q "PRAGMA integrity_check")" = ok ] || fail "integrity_check: $(q "PRAGMA integrity_check")"
[ -z "$(q "PRAGMA foreign_key_check")" ] || fail "foreign_key_check: $(q "PRAGMA foreign_key_check")"
echo "ok: five SIGKILLs during joins, the store consistent"
