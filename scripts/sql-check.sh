#!/bin/sh
# SQL has two homes: src/rows (one file per table) and src/store (the engines,
# migrations, copy and prune). This fails, printing file:line for each, on a string
# literal outside them that reads as a statement: an upper-case SELECT, INSERT,
# UPDATE or DELETE followed later in the same literal by FROM, INTO, SET or WHERE.
# Adjacent literals count as one (C joins them), also across lines and around a macro
# argument ("(SELECT c." col " FROM ..."); literals apart by a comma or a bracket do
# not, so {"DELETE", "/v1/..."} is no statement. Comments and character constants are
# skipped.
#
# usage: scripts/sql-check.sh [ROOT] [ALLOW]
#   ROOT   the tree to check (default: this repository); its src/ and include/ are
#          read (the program: tests may read the database to check it)
#   ALLOW  files still allowed to hold SQL, one path relative to ROOT a line, # for
#          comments (default: ROOT/scripts/sql-check.allow; none when missing)
# Exit: 0 clean, 1 when a statement was found, 2 on a usage error.
set -eu
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
allow=${2:-$root/scripts/sql-check.allow}
[ -d "$root/src" ] || { echo "sql-check: no src/ under $root" >&2; exit 2; }
cd "$root"
[ -f "$allow" ] || allow=/dev/null

# the files to read: src/ and include/, less the two homes and the allow-list
list=$(find src include -type f \( -name '*.c' -o -name '*.h' \) 2>/dev/null |
	grep -v -e '^src/rows/' -e '^src/store/' | LC_ALL=C sort |
	awk -v allow="$allow" 'BEGIN {
		while ((getline l < allow) > 0) {
			sub(/#.*/, "", l)
			gsub(/[ \t]+$/, "", l)
			if (l != "") skip[l] = 1
		}
	}
	!($0 in skip)')
[ -n "$list" ] || exit 0

# shellcheck disable=SC2086 # the list is of paths without blanks
LC_ALL=C awk '
function flush(   g) {
	# the verb as a word, then a clause as a word later in the same literal
	g = " " grp " "
	if (g ~ /[^A-Za-z0-9_](SELECT|INSERT|UPDATE|DELETE)[^A-Za-z0-9_](.*[^A-Za-z0-9_])?(FROM|INTO|SET|WHERE)[^A-Za-z0-9_]/) {
		printf "%s:%d: SQL in a string literal: %s\n", grpfile, grpline, substr(grp, 1, 100)
		found = 1
	}
	grp = ""
	ingrp = 0
}
FNR == 1 {
	if (NR != 1) flush()
	state = "code"
}
# most lines have no quote, comment or character constant: they only end a group
state == "code" && $0 !~ /["\047\/]/ {
	if (ingrp && $0 ~ /[^ \t\\A-Za-z0-9_]/) flush()
	next
}
{
	line = $0
	n = length(line)
	i = 1
	while (i <= n) {
		ch = substr(line, i, 1)
		if (state == "comment") {
			if (ch == "*" && substr(line, i + 1, 1) == "/") { state = "code"; i += 2; continue }
			i++
			continue
		}
		if (state == "string") {
			if (ch == "\\") { grp = grp substr(line, i, 2); i += 2; continue }
			if (ch == "\"") { state = "code"; i++; continue }
			grp = grp ch
			i++
			continue
		}
		# code
		if (ch == "/" && substr(line, i + 1, 1) == "/") break
		if (ch == "/" && substr(line, i + 1, 1) == "*") { state = "comment"; i += 2; continue }
		if (ch == "\"") {
			if (!ingrp) { ingrp = 1; grpline = FNR; grpfile = FILENAME }
			state = "string"
			i++
			continue
		}
		if (ch == "\047") {
			# a character constant: skip to its closing quote
			j = i + 1
			while (j <= n) {
				c2 = substr(line, j, 1)
				if (c2 == "\\") { j += 2; continue }
				if (c2 == "\047") break
				j++
			}
			if (ingrp) flush()
			i = j + 1
			continue
		}
		# between literals of one group: blanks, a line continuation, a macro name
		if (ingrp && ch !~ /[ \t\\A-Za-z0-9_]/) flush()
		i++
	}
	if (state == "string") state = "code" # an unterminated literal: not C, stop it here
}
END {
	flush()
	exit found ? 1 : 0
}' $list
