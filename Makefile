# The two commands of the README: `make run` and `make check`.
# Build directories: build/ (release), build-test/ (BC_TESTING=ON), build-asan/
# (ASan + UBSan), build-fuzz/ (clang, libFuzzer).
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
VAR ?= var
FUZZ_SECONDS ?= 10
# make install: under $(DESTDIR)$(PREFIX) (bin/, share/man, share/doc, lib/systemd/system)
PREFIX ?= /usr/local
DESTDIR ?=

.PHONY: all deps build build-test install deb run check test asan fuzz fuzz-build bench bench-fleet bench-scale bench-peers soak format format-check sql-check clean

all: build

deps:
	@scripts/deps.sh

build: deps
	@cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build build -j$(JOBS) -- --no-print-directory

build-test: deps
	@cmake -S . -B build-test -DBC_TESTING=ON >/dev/null
	@cmake --build build-test -j$(JOBS) -- --no-print-directory

# better-compute, bcd, their man pages, bash completions, docs and systemd units (whose
# ExecStart names $(PREFIX)/bin); DESTDIR=/tmp/root stages them for a package
install: build
	@DESTDIR="$(DESTDIR)" cmake --install build --prefix "$(PREFIX)"

# Debian packages better-compute and bcd in build-deb/ (debian/, scripts/deb.sh), lintian-checked
deb: deps
	@scripts/deb.sh build-deb

run: build
	@scripts/run.sh build/better-compute $(VAR)

# Every suite: no SQL outside its homes (seconds), the test build, the same suite
# under ASan + UBSan, then each fuzz target for a few seconds.
check: sql-check test asan fuzz

# One throwaway PostgreSQL cluster per run (scripts/pg.sh run: BC_TEST_POSTGRES_URL
# for the store and *_pg tests, stopped whatever ctest did); without one, SQLite only.
test: build-test
	@scripts/pg.sh run sh -c 'cd build-test && ctest --output-on-failure -j$(JOBS)'

asan: deps
	@cmake -S . -B build-asan -DBC_TESTING=ON -DBC_SANITIZE=ON >/dev/null
	@cmake --build build-asan -j$(JOBS) -- --no-print-directory
	@scripts/pg.sh run sh -c 'cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
		UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure -j$(JOBS)'

fuzz-build: deps
	@CC=clang cmake -S . -B build-fuzz -DBC_FUZZ=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
	@cmake --build build-fuzz -j$(JOBS) -- --no-print-directory

# make fuzz FUZZ_SECONDS=600 for a longer run
fuzz: fuzz-build
	@scripts/fuzz.sh build-fuzz $(FUZZ_SECONDS)

bench: build
	@scripts/bench.sh build

# 10,000 nodes renewing at once, then a herd of 5,000 (minutes; not in CI)
bench-fleet: build
	@scripts/bench-fleet.sh build

# A day of churn, compressed: joins, renewals, refusals and admin reads at a steady rate
# against one server over TLS, its RSS, fds and database size every minute
# (scripts/soak.sh; SOAK_MINUTES, default 30; not in CI)
SOAK_MINUTES ?= 30
soak: build
	@BC_BINARY_DIR=build SOAK_MINUTES=$(SOAK_MINUTES) scripts/soak.sh

# Each list's page, nodes get, /metrics and prune at 10,000 to 1,000,000 nodes on a
# store filled directly (bench/bc_scale.c; minutes; not in CI)
bench-scale: build
	@scripts/bench-scale.sh build

# Ours beside step-ca and cfssl, interleaved, over TLS (scripts/bench-peers.sh runs
# BENCH_PEERS/run.sh; it installs Go and the peers' Debian packages and builds step-ca
# the first time, ~2 minutes; then minutes; not in CI). ROUNDS, N, C, PIN as run.sh.
BENCH_PEERS ?= ../shared/bench-peers
bench-peers: build
	@scripts/bench-peers.sh build $(BENCH_PEERS)

format:
	@clang-format -i $$(git ls-files '*.c' '*.h')

# What .ci/run enforces: every C file as the repository's .clang-format writes it.
format-check: deps
	@clang-format --dry-run -Werror $$(git ls-files '*.c' '*.h')

# What .ci/run enforces next: SQL only in src/rows and src/store
# (scripts/sql-check.allow names the files not moved yet).
sql-check:
	@scripts/sql-check.sh

clean:
	rm -rf build build-test build-asan build-fuzz build-deb
