#!/usr/bin/env bash
# Debian packages: scripts/deb.sh [OUT_DIR] (default build-deb) builds better-compute and
# bcd with dpkg-buildpackage (debian/) from a copy of the tree's files (tracked and new,
# not ignored) in OUT_DIR/src, so that the .debs and .changes land in OUT_DIR and the
# tree stays clean, then runs lintian on them: an error fails, warnings are printed.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$(realpath -m "${1:-$ROOT/build-deb}")
for tool in dpkg-buildpackage dh lintian fakeroot; do
	command -v "$tool" >/dev/null 2>&1 ||
		{ echo "deb: $tool is missing: run make deps (debhelper, dpkg-dev, lintian, fakeroot)" >&2; exit 1; }
done
# one version: CMakeLists.txt's project(), which debian/changelog must repeat
want=$(sed -n 's/^project(better_compute VERSION \([0-9.]*\).*/\1/p' "$ROOT/CMakeLists.txt")
have=$(dpkg-parsechangelog -l "$ROOT/debian/changelog" -S Version)
[ "$want" = "$have" ] || {
	echo "deb: debian/changelog says $have, CMakeLists.txt $want: add a changelog entry (dch -v $want)" >&2
	exit 1
}
rm -rf "$OUT"
mkdir -p "$OUT/src"
if git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1; then
	(cd "$ROOT" && git ls-files -z -co --exclude-standard |
		tar --null -T - --ignore-failed-read -cf - 2>/dev/null) | tar -xf - -C "$OUT/src"
else
	tar -C "$ROOT" --exclude='./build*' --exclude=./var -cf - . | tar -xf - -C "$OUT/src"
fi
(cd "$OUT/src" && dpkg-buildpackage -us -uc -b) >"$OUT/build.log" 2>&1 || {
	tail -n 40 "$OUT/build.log" >&2
	echo "deb: dpkg-buildpackage failed; the whole log is $OUT/build.log" >&2
	exit 1
}
lintian --fail-on error --display-info "$OUT"/*.changes >"$OUT/lintian.txt" 2>&1 || {
	cat "$OUT/lintian.txt" >&2
	echo "deb: lintian found errors (above)" >&2
	exit 1
}
ls "$OUT"/*.deb
tags=$(grep -E '^[WI]: ' "$OUT/lintian.txt" | sort -u || true)
if [ -n "$tags" ]; then
	echo "deb: lintian: no errors; its warnings and notes ($OUT/lintian.txt):"
	echo "$tags"
else
	echo "deb: lintian: no errors, no warnings"
fi
