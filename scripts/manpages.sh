#!/usr/bin/env bash
# Man pages from the help text: scripts/manpages.sh [BUILD_DIR [OUT_DIR]] writes
# OUT_DIR/better-compute.1 and, when bcd is built, OUT_DIR/bcd.1 (defaults: build,
# BUILD_DIR/man). Each page holds `PROG --help`, then each command's `PROG CMD --help`
# (a command whose help is only the global usage is listed there, not repeated).
set -euo pipefail
BUILD="${1:-build}"
OUT="${2:-$BUILD/man}"
mkdir -p "$OUT"

# roff-escaped text as a no-fill block
verbatim() {
	printf '.nf\n'
	sed -e 's/\\/\\e/g' -e "s/^[.']/\\\\\\&&/"
	printf '.fi\n'
}

# the command words of a "Commands:" section: a line's text up to its first two spaces
commands_of() {
	awk '/^Commands:/ { on = 1; next } on && /^[^ ]/ { on = 0 }
		on && /^  [^ -]/ { sub(/^  /, ""); sub(/  .*/, ""); sub(/ +\[.*/, ""); if ($0 != "") print }'
}

page() {
	local prog="$1" bin="$2" desc="$3" out="$OUT/$1.1" top version words
	top="$("$bin" --help 2>&1 || true)"
	version="$("$bin" --version 2>/dev/null | head -n 1 || true)"
	{
		printf '.TH %s 1 "" "%s" "User Commands"\n' "$(echo "$prog" | tr a-z A-Z)" "${version:-$prog}"
		printf '.SH NAME\n%s \\- %s\n' "$prog" "$desc"
		printf '.SH SYNOPSIS\n'
		printf '%s\n' "$top" | verbatim
		printf '.SH COMMANDS\n'
		while IFS= read -r words; do
			local help
			# shellcheck disable=SC2086
			help="$("$bin" $words --help 2>&1 || true)"
			[ -n "$help" ] && [ "$help" != "$top" ] || continue
			printf '.SS %s\n' "$words"
			printf '%s\n' "$help" | verbatim
		done < <(printf '%s\n' "$top" | commands_of)
	} >"$out"
	echo "$out"
}

page better-compute "$BUILD/better-compute" "the Better Compute control plane and its admin CLI"
if [ -x "$BUILD/bcd" ]; then
	page bcd "$BUILD/bcd" "the Better Compute node agent"
fi
