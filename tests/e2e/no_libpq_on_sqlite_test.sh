#!/usr/bin/env bash
# libpq is loaded only for a postgres:// store (src/store/postgres.c, dlopen): the
# binaries do not link it, a serving SQLite server has not mapped it (/proc/PID/maps),
# and a postgres:// store whose libpq cannot be loaded is refused at start with a
# message naming the library (a test build names a missing one with BC_TEST_LIBPQ).
# (GnuTLS and libcurl: tests/e2e/no_gnutls_test.sh.)
. "$(dirname "$0")/lib.sh"
cd "$T"
for b in better-compute bcd; do
	[ -x "$BIN/$b" ] || continue
	if ldd "$BIN/$b" | grep -q 'libpq\.so'; then fail "$b links libpq: $(ldd "$BIN/$b" | grep libpq)"; fi
done
PORT=$(free_port)
"$BIN/better-compute" init --dir var --listen "127.0.0.1:$PORT" >init.out
start_server var
grep -q 'libpq' "/proc/$SERVER_PID/maps" && fail "a SQLite server mapped libpq: $(grep libpq "/proc/$SERVER_PID/maps" | head -n 1)"
stop_server var

# a postgres:// store without its library: refused at start, naming it
sed -i 's|^database *=.*|database = "postgres://bc@127.0.0.1:1/bc"|' var/server.toml
grep -q '^database = "postgres://' var/server.toml || fail "server.toml has no database key to point at PostgreSQL"
rc=0
BC_TEST_LIBPQ=libpq-not-here.so.5 timeout 60 "$BIN/better-compute" serve --config var/server.toml \
	>missing.out 2>&1 || rc=$?
[ "$rc" != 0 ] || fail "serve started on a postgres:// store without libpq"
grep -q 'cannot load libpq-not-here.so.5' missing.out ||
	fail "the refusal does not name the library: $(cat missing.out)"
grep -q 'install libpq5' missing.out || fail "the refusal does not say what to install: $(cat missing.out)"
echo "ok: no libpq linked or mapped on SQLite; a missing libpq is named: $(grep -o 'postgres: cannot load[^"]*' missing.out | head -n 1)"
