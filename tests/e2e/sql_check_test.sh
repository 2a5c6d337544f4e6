#!/usr/bin/env bash
# scripts/sql-check.sh: the tree as committed passes; a statement planted in a copy
# of it fails, naming file:line, in each shape the check knows (a literal on one line,
# literals joined across lines and around a macro argument); what is no statement (a
# verb alone, an HTTP method beside a path, a comment, SQL under src/rows or
# src/store, an allow-listed file) does not.
set -euo pipefail
SRC=${BC_SOURCE_DIR:?BC_SOURCE_DIR is set by CTest}
T=$(mktemp -d /tmp/bc-sqlcheck.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
CHECK="$SRC/scripts/sql-check.sh"

"$CHECK" "$SRC" || fail "the committed tree does not pass"

mkdir -p "$T/tree"
cp -r "$SRC/src" "$SRC/include" "$T/tree/"
mkdir -p "$T/tree/scripts"
cp "$SRC/scripts/sql-check.allow" "$T/tree/scripts/"
"$CHECK" "$T/tree" >"$T/out" || fail "the copy does not pass: $(cat "$T/out")"

# plant FILE CONTENT EXPECTED-LINE: the copy with FILE written fails at FILE:LINE
plant() {
	local f=$1 body=$2 line=$3 rc=0
	printf '%s\n' "$body" >"$T/tree/$f"
	"$CHECK" "$T/tree" >"$T/out" 2>&1 || rc=$?
	rm -f "$T/tree/$f"
	[ "$rc" = 1 ] || fail "$f: exit $rc, not 1: $(cat "$T/out")"
	grep -q "^$f:$line: " "$T/out" || fail "$f: no $f:$line in: $(cat "$T/out")"
	echo "planted $f: $(head -1 "$T/out")"
}
# clean FILE CONTENT: the copy with FILE written still passes
clean() {
	local f=$1 body=$2 rc=0
	mkdir -p "$(dirname "$T/tree/$f")"
	printf '%s\n' "$body" >"$T/tree/$f"
	"$CHECK" "$T/tree" >"$T/out" 2>&1 || rc=$?
	rm -f "$T/tree/$f"
	[ "$rc" = 0 ] || fail "$f: flagged, exit $rc: $(cat "$T/out")"
}

plant src/server/planted.c 'static const char *q = "SELECT id FROM nodes WHERE id = $1";' 1
plant src/server/planted.c 'int f(void)
{
	return exec(tx, "UPDATE nodes "
	                "SET state = $1", p);
}' 3
plant src/cli/planted.h '#define Q(col) \
	"(SELECT c." col " FROM node_certs c)"' 2
plant src/attest/planted.c 'x = "delete"; y = "DELETE FROM inventory";' 1
plant include/bc/planted.h '/* a header */
const char *s = "INSERT INTO tenants (id) VALUES ($1)";' 2
# a planted statement in an allow-listed file passes; the same file off the list fails
# (the committed list is empty: this one is the test's own)
printf '%s\n' '# a comment' 'src/join/site.c' >"$T/allow"
printf '%s\n' 'const char *q = "SELECT 1 FROM sites WHERE id = $1";' >"$T/tree/src/join/site.c"
"$CHECK" "$T/tree" "$T/allow" >"$T/out" 2>&1 || fail "site.c on the list flagged: $(cat "$T/out")"
rc=0
"$CHECK" "$T/tree" /dev/null >"$T/out" 2>&1 || rc=$?
[ "$rc" = 1 ] && grep -q '^src/join/site.c:1: ' "$T/out" || fail "site.c off the list passed"
cp "$SRC/src/join/site.c" "$T/tree/src/join/site.c"

clean src/server/clean.c '/* SELECT id FROM nodes WHERE x */
// DELETE FROM nodes WHERE id = 1
static const struct { const char *m, *p; } r[] = {{"DELETE", "/v1/nodes/{n}"}};
static const char *h = "rows per INSERT (default 500)";
static const char c = '"'"'"'"'"';
static const char *u = "select id from nodes where id = 1";'
clean src/rows/clean.c 'static const char *q = "SELECT id FROM nodes WHERE id = $1";'
clean src/store/clean.c 'static const char *q = "DELETE FROM nodes WHERE id = $1";'
echo "sql-check: ok"
