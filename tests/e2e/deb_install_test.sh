#!/usr/bin/env bash
# The install path: `make install`'s rules (DESTDIR and a prefix: the units' ExecStart
# names the installed binary), then the Debian packages of `make deb` (scripts/deb.sh):
# their names, version and files with their modes, extracted into a clean root with
# dpkg -x, each unit's ExecStart and Documentation present in that root, and the server
# run from the installed binary: init, serve on a free loopback port, /healthz answers
# the packaged version; the packaged bcd reports the same version.
# The packages: BC_DEB_DIR when set (CI after make deb), else build-deb/ when it is newer
# than the sources, else built here into BC_BINARY_DIR/deb (minutes, once).
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
VERSION=$(sed -n 's/^project(better_compute VERSION \([0-9.]*\).*/\1/p' "$ROOT/CMakeLists.txt")
ARCH=$(dpkg --print-architecture)
cd "$T"

# ---- make install: DESTDIR and a prefix ----
DESTDIR="$T/staged" cmake --install "$BIN" --prefix /opt/bc >install.out 2>&1 ||
	fail "cmake --install: $(cat install.out)"
S=$T/staged/opt/bc
for f in bin/better-compute bin/bcd; do
	[ "$(stat -c %a "$S/$f")" = 755 ] || fail "make install: $f is not mode 0755"
done
for f in share/man/man1/better-compute.1 share/man/man1/bcd.1 \
	share/bash-completion/completions/better-compute share/bash-completion/completions/bcd \
	share/doc/better-compute/server.md share/doc/bcd/agent.md \
	lib/systemd/system/better-compute.service lib/systemd/system/bcd.service \
	lib/systemd/system/bcd-helper.service; do
	[ "$(stat -c %a "$S/$f" 2>/dev/null)" = 644 ] || fail "make install: $f missing or not 0644"
done
grep -qx 'ExecStart=/opt/bc/bin/better-compute serve --config /var/lib/better-compute/server.toml' \
	"$S/lib/systemd/system/better-compute.service" ||
	fail "make install: the unit does not run /opt/bc/bin: $(grep ExecStart "$S/lib/systemd/system/better-compute.service")"
grep -qx 'Documentation=file:///opt/bc/share/doc/bcd/agent.md' "$S/lib/systemd/system/bcd.service" ||
	fail "make install: bcd.service's Documentation"
grep -q '^\.SH COMMANDS' "$S/share/man/man1/better-compute.1" || fail "make install: the man page has no COMMANDS"
grep -rq /usr/local "$S/lib/systemd/system" && fail "make install: a unit still names /usr/local"

# ---- the packages ----
# make deb refuses a debian/changelog that does not carry CMakeLists.txt's version
mkdir -p fake/scripts fake/debian
cp "$ROOT/scripts/deb.sh" fake/scripts/
cp "$ROOT/debian/changelog" fake/debian/
sed "s/^project(better_compute VERSION [0-9.]*/project(better_compute VERSION 9.9.9/" \
	"$ROOT/CMakeLists.txt" >fake/CMakeLists.txt
if fake/scripts/deb.sh "$T/fake-out" >fake.out 2>&1; then fail "deb.sh built with a stale changelog"; fi
grep -qF "deb: debian/changelog says $VERSION, CMakeLists.txt 9.9.9: add a changelog entry (dch -v 9.9.9)" \
	fake.out || fail "deb.sh's version refusal: $(cat fake.out)"
[ ! -e "$T/fake-out" ] || fail "deb.sh made its output directory before the version check"
newer_sources() { # a source file newer than $1
	(cd "$ROOT" && find CMakeLists.txt cmake debian docs include packaging proto scripts src web \
		README.md -newer "$1" -type f -print -quit)
}
if [ -n "${BC_DEB_DIR:-}" ]; then
	DEBS=$BC_DEB_DIR
elif ls "$ROOT"/build-deb/*.changes >/dev/null 2>&1 &&
	[ -z "$(newer_sources "$(ls "$ROOT"/build-deb/*.changes | head -n 1)")" ]; then
	DEBS=$ROOT/build-deb
else
	DEBS=$BIN/deb
	if ! ls "$DEBS"/*.changes >/dev/null 2>&1 ||
		[ -n "$(newer_sources "$(ls "$DEBS"/*.changes | head -n 1)")" ]; then
		"$ROOT/scripts/deb.sh" "$DEBS" >deb.out 2>&1 || fail "scripts/deb.sh: $(tail -n 40 deb.out)"
	fi
fi
SERVER_DEB=$DEBS/better-compute_${VERSION}_$ARCH.deb
BCD_DEB=$DEBS/bcd_${VERSION}_$ARCH.deb
[ -f "$SERVER_DEB" ] && [ -f "$BCD_DEB" ] || fail "no packages of $VERSION in $DEBS: $(ls "$DEBS")"
for deb in "$SERVER_DEB" "$BCD_DEB"; do
	[ "$(dpkg-deb -f "$deb" Version)" = "$VERSION" ] || fail "$deb: version $(dpkg-deb -f "$deb" Version)"
	dpkg-deb -f "$deb" Depends | grep -q adduser || fail "$deb: no Depends on adduser (its postinst)"
	dpkg-deb -I "$deb" postinst | grep -q 'adduser --quiet --system' || fail "$deb: postinst makes no user"
done
[ "$(dpkg-deb -f "$SERVER_DEB" Package)" = better-compute ] || fail "server package name"
[ "$(dpkg-deb -f "$BCD_DEB" Package)" = bcd ] || fail "agent package name"

# files and modes, as the package lists them (owner root)
dpkg-deb -c "$SERVER_DEB" >server.list
dpkg-deb -c "$BCD_DEB" >bcd.list
want() { # LIST MODE PATH
	awk -v m="$2" -v p="./$3" '$1 == m && $2 == "root/root" && $6 == p { f = 1 } END { exit !f }' "$1" ||
		fail "$(basename "$1" .list): no $3 of mode $2 owned by root: $(grep -F "$3" "$1" || echo absent)"
}
want server.list -rwxr-xr-x usr/bin/better-compute
want server.list -rw-r--r-- lib/systemd/system/better-compute.service
want server.list -rw-r--r-- usr/share/man/man1/better-compute.1.gz
want server.list -rw-r--r-- usr/share/bash-completion/completions/better-compute
want server.list -rw-r--r-- usr/share/doc/better-compute/server.md
want server.list -rw-r--r-- usr/share/doc/better-compute/copyright
want bcd.list -rwxr-xr-x usr/bin/bcd
want bcd.list -rw-r--r-- lib/systemd/system/bcd.service
want bcd.list -rw-r--r-- lib/systemd/system/bcd-helper.service
want bcd.list -rw-r--r-- usr/share/man/man1/bcd.1.gz
want bcd.list -rw-r--r-- usr/share/bash-completion/completions/bcd
want bcd.list -rw-r--r-- usr/share/doc/bcd/agent.md
grep -q 'usr/bin/bcd$' server.list && fail "the server package holds bcd"
grep -q 'usr/bin/better-compute$' bcd.list && fail "the agent package holds better-compute"

# a clean root with both packages
R=$T/root
mkdir "$R"
dpkg -x "$SERVER_DEB" "$R"
dpkg -x "$BCD_DEB" "$R"
for unit in better-compute bcd bcd-helper; do
	u=$R/lib/systemd/system/$unit.service
	exec_bin=$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' "$u")
	case $exec_bin in /usr/bin/*) ;; *) fail "$unit.service runs $exec_bin, not from /usr/bin" ;; esac
	[ -x "$R$exec_bin" ] || fail "$unit.service's ExecStart $exec_bin is not in the package"
	doc=$(sed -n 's|^Documentation=file://||p' "$u")
	[ -f "$R$doc" ] || fail "$unit.service's Documentation $doc is not in the package"
done
# read whole before grep: grep -q leaving early would fail zcat (SIGPIPE) under pipefail
zcat "$R/usr/share/man/man1/better-compute.1.gz" >"$T/better-compute.1"
grep -q '^\.SS nodes list' "$T/better-compute.1" || fail "man page lacks nodes list"
bash -c ". '$R/usr/share/bash-completion/completions/bcd' && complete -p bcd" >/dev/null ||
	fail "the bcd completion defines no completion"
[ "$("$R/usr/bin/bcd" --version)" = "bcd $VERSION" ] || fail "packaged bcd --version: $("$R/usr/bin/bcd" --version)"
[ "$("$R/usr/bin/better-compute" --version)" = "better-compute $VERSION" ] || fail "packaged --version"

# the server from the installed paths, as the unit runs it
PORT=$(free_port)
mkdir -m 0700 state
"$R/usr/bin/better-compute" init --dir "$T/state" --listen "127.0.0.1:$PORT" >init.out ||
	fail "init: $(cat init.out)"
cmd=$(sed -n 's/^ExecStart=//p' "$R/lib/systemd/system/better-compute.service")
cmd=${cmd//\/var\/lib\/better-compute/$T/state}
# shellcheck disable=SC2086
"$R"$cmd >serve.log 2>&1 &
PID=$!
PIDS="$PIDS $PID"
: >healthz.out
for _ in $(seq 1 100); do curl -fsS "http://127.0.0.1:$PORT/healthz" >healthz.out 2>/dev/null && break; sleep 0.1; done
[ "$(json_get '["version"]' <healthz.out)" = "$VERSION" ] ||
	fail "the packaged server did not answer /healthz with $VERSION: $(cat healthz.out serve.log)"
kill -TERM "$PID"; rc=0; wait "$PID" || rc=$?
[ "$rc" = 0 ] || fail "the packaged server exited $rc after SIGTERM"
echo "ok: make install under DESTDIR and /opt/bc; $(basename "$SERVER_DEB") and $(basename "$BCD_DEB") from $DEBS: files and modes, units' ExecStart and docs in a dpkg -x root, the packaged server served /healthz $VERSION"
