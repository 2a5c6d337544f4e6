#!/usr/bin/env bash
# Upgrades on SQLite (issue 26, item 2): the previous release's store
# (tests/fixtures/upgrade/sqlite.sql: tenants, pools, sites, API keys, nodes and their
# certificates, tokens, a workflow, events, audit) opened by today's server. `store
# migrate --check` lists the migrations after the fixture's version and changes
# nothing; the server applies them at start; every row reads back through the CLI;
# the old nodes renew with their own keys (bcd node); the old tokens join and the
# revoked one is refused; the store passes integrity_check. A schema newer than the
# binary is refused at start and by --check, naming both versions.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/upgrade_lib.sh"
cd "$T"
q() { sqlite3 -batch -noheader var/bc.db "$1"; }
load() { sqlite3 -batch var/bc.db <"$FX/sqlite.sql"; }
upgrade_setup bc.db load
[ "$(q "SELECT MAX(version) FROM schema_migrations")" = "$FX_VERSION" ] || fail "the dump did not load"
upgrade_run
[ "$(q "PRAGMA integrity_check")" = ok ] || fail "integrity_check: $(q "PRAGMA integrity_check")"
[ -z "$(q "PRAGMA foreign_key_check")" ] || fail "foreign_key_check: $(q "PRAGMA foreign_key_check")"
newer_refused q
echo "ok: a version $FX_VERSION store (SQLite) upgraded to $LATEST, read back, renewed and joined"
