#!/usr/bin/env bash
# Upgrades on PostgreSQL (issue 26, item 2): as upgrade_test.sh, from the previous
# release's pg_dump (tests/fixtures/upgrade/postgres.sql) loaded into a throwaway
# PostgreSQL.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pg_lib.sh"
. "$(dirname "$0")/upgrade_lib.sh"
cd "$T"
load() { psql "$PGURL" -X -q -v ON_ERROR_STOP=1 -f "$FX/postgres.sql" >load.out; }
upgrade_setup "$PGURL" load
[ "$(sql "SELECT MAX(version) FROM schema_migrations")" = "$FX_VERSION" ] || fail "the dump did not load"
upgrade_run
newer_refused sql
echo "ok: a version $FX_VERSION store (PostgreSQL) upgraded to $LATEST, read back, renewed and joined"
