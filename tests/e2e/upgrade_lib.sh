# Shared by upgrade_test.sh (SQLite) and upgrade_pg_test.sh (PostgreSQL): a store made
# by the previous release (tests/fixtures/upgrade, made by its make.sh), opened by
# today's better-compute. Source it after lib.sh (and pg_lib.sh); call upgrade_setup
# DATABASE LOAD, where LOAD is a command that loads the engine's dump, then
# upgrade_run. The test runs at the time the fixture was made
# (BC_TEST_CLOCK_OFFSET_MS), so that its certificates and tokens are as they were.
FX=$(cd "$(dirname "${BASH_SOURCE[0]}")/../fixtures/upgrade" && pwd)
MIGRATIONS=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../src/store/migrations" && pwd)
bc() { "$BIN/better-compute" "$@"; }
bcd() { "$BIN/bcd" "$@"; }
. "$FX/readback.sh"
FX_VERSION=$(sed -n 's/^schema_version=//p' "$FX/meta")
FX_MS=$(sed -n 's/^created_ms=//p' "$FX/meta")
export BC_TEST_CLOCK_OFFSET_MS=$((FX_MS + 60000 - $(date +%s%3N)))
# the migrations this source tree holds, and the highest: whatever exists when it runs
LATEST=$(ls "$MIGRATIONS" | sed -n 's/^0*\([0-9][0-9]*\)_.*\.sql$/\1/p' | sort -n | tail -n 1)

upgrade_setup() {
	local database=$1 load=$2
	PORT=$(free_port)
	URL="http://127.0.0.1:$PORT"
	mkdir -p var
	cp "$FX/var/secret" "$FX/var/pki.bundle" "$FX/var/admin.key" var/
	chmod 600 var/secret var/pki.bundle var/admin.key
	cat >var/server.toml <<TOML
listen      = "127.0.0.1:$PORT"
public_url  = "$URL"
database    = "$database"
secret_file = "secret"
pki_bundle  = "pki.bundle"
TOML
	$load
	cp -r "$FX/machines" machines
	cp -r "$FX/tokens" tokens
	find machines -name config.toml -exec sed -i "s|@DIR@|$T|g; s|@URL@|$URL|g" {} +
	chmod 700 machines/*/data
	chmod 600 machines/*/data/* tokens/*
}

# tenant_of NAME: the fixture's machine a1 is in tenant acme, the others in root
tenant_of() {
	if [ "$1" = a1 ] || [ "$1" = n4 ]; then
		bc --json tenants list | python3 -c 'import json,sys; print([t["id"] for t in json.load(sys.stdin)["tenants"] if t["name"] == "acme"][0])'
	else
		echo root
	fi
}
node_of() { bcd status --json --config "machines/$1/config.toml" | json_get '["nodeId"]'; }
serial_of() { bcd status --json --config "machines/$1/config.toml" | json_get '["serial"]'; }

# renew NAME: bcd node renews the fixture's machine once, as today's server signs it
renew() {
	local s0 pid
	s0=$(serial_of "$1")
	BCD_RENEW_AFTER=1s BCD_RETRY_BASE=1s "$BIN/bcd" node --config "machines/$1/config.toml" >"renew-$1.log" 2>&1 &
	pid=$!
	PIDS="$PIDS $pid"
	for _ in $(seq 1 300); do
		[ "$(serial_of "$1")" != "$s0" ] && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -TERM "$pid" 2>/dev/null || true
	wait "$pid" || true
	PIDS=$(echo "$PIDS" | sed "s/ $pid//")
	[ "$(serial_of "$1")" != "$s0" ] || fail "the fixture's $1 did not renew: $(cat "renew-$1.log")"
	bc --json --tenant "$(tenant_of "$1")" events list --type node.renewed --node "$(node_of "$1")" --limit 1 | grep -q node.renewed ||
		fail "no node.renewed event for $1"
}

# newer_refused Q: with the store's schema one version newer than this binary (Q runs
# one SQL statement), serve and store migrate --check refuse, naming both versions
newer_refused() {
	local q=$1 rc=0 want
	$q "INSERT INTO schema_migrations (version, name, applied_at) VALUES ($((LATEST + 1)), 'from_the_future', 0)"
	want="the database schema is version $((LATEST + 1)), newer than this better-compute ($LATEST): upgrade better-compute"
	bc serve --config var/server.toml >newer.out 2>&1 || rc=$?
	[ "$rc" = 1 ] || fail "serve on a newer schema exited $rc: $(cat newer.out)"
	grep -qF "$want" newer.out || fail "serve on a newer schema: $(cat newer.out)"
	rc=0
	bc store migrate --config var/server.toml --check >newer-check.out 2>&1 || rc=$?
	[ "$rc" = 1 ] || fail "store migrate --check on a newer schema exited $rc"
	grep -qF "$want" newer-check.out || fail "store migrate --check: $(cat newer-check.out)"
	echo "refused: $want"
}

upgrade_run() {
	local want got name n
	# what would run: every migration after the fixture's version, in order
	want=$(ls "$MIGRATIONS" | sed -n 's/\.sql$//p' | sort |
		awk -F_ -v v="$FX_VERSION" '$1 + 0 > v { print "would run " $0 }')
	bc store migrate --config var/server.toml --check >check.out
	cat check.out
	got=$(grep '^would run ' check.out || true)
	[ "$got" = "$want" ] || fail "store migrate --check listed [$got], want [$want]"
	if [ -z "$want" ]; then
		grep -q "^schema version $FX_VERSION, the latest this better-compute knows: nothing to run$" check.out ||
			fail "store migrate --check: $(cat check.out)"
	else
		grep -q "^schema version $FX_VERSION: $(echo "$want" | wc -l) migrations\? would run to reach $LATEST " check.out ||
			fail "store migrate --check: $(cat check.out)"
	fi
	# --check changed nothing: it says the same again
	bc store migrate --config var/server.toml --check | cmp -s - check.out || fail "--check changed the store"

	start_server var
	n=$(grep -c 'msg="schema migration applied"' var/serve.log || true)
	[ "$n" = "$(echo -n "$want" | grep -c .)" ] || fail "$n migrations applied at start, want: $want"
	bc store migrate --config var/server.toml --check | grep -q "^schema version $LATEST, the latest" ||
		fail "not at version $LATEST after start"

	# every row of the fixture reads back through the admin CLI
	readback got.txt
	if ! diff <(sort "$FX/expect.txt") <(sort got.txt) | grep '^<' >missing.txt; then :; fi
	[ ! -s missing.txt ] || fail "rows of the old store that do not read back: $(cat missing.txt)"
	echo "read back: $(wc -l <"$FX/expect.txt") rows of the fixture"
	# each machine's certificate is the node's current one in the store
	for name in m1 m2 m4 a1; do
		[ "$(bc --json --tenant "$(tenant_of $name)" nodes get "$(node_of $name)" | json_get '["certificate"]["serial"]')" = "$(serial_of $name)" ] ||
			fail "$name's certificate is not its node's in the store"
	done

	# the old nodes renew; the old tokens join, and the revoked one is refused
	for name in m1 m2 m4 a1; do renew $name; done
	bcd_join_new n1 tokens/web "6b1d0c3e-f1f1-4000-8000-0000000000b1"
	bcd_join_new n2 tokens/web3 "6b1d0c3e-f1f1-4000-8000-0000000000b2"
	bcd_join_new n3 tokens/web3 "6b1d0c3e-f1f1-4000-8000-0000000000b3"
	bcd_join_new n4 tokens/batch "6b1d0c3e-f1f1-4000-8000-0000000000b4"
	if bcd_join_new n5 tokens/revoked "6b1d0c3e-f1f1-4000-8000-0000000000b5" 2>/dev/null; then
		fail "the fixture's revoked token joined"
	fi
	grep -q "permission_denied\|refused" join-n5.out || fail "revoked token: $(cat join-n5.out)"
	echo "renewed: m1 m2 m4 a1; joined with old tokens: n1 n2 n3 n4; the revoked token refused"
	stop_server var
}

# bcd_join_new NAME TOKEN UUID: a new machine joins with a token of the fixture
bcd_join_new() {
	bc daemon config --bcd-dir "$T/machines/$1" --data-dir "$T/machines/$1/data" >/dev/null
	cat >"machines/$1/claims.json" <<JSON
{"product_uuid":"$3","serial":"SN-$1","macs":["02:00:00:00:01:0${1#n}"],"hostname":"$1","arch":"x86_64"}
JSON
	printf '\n[fakehw]\nclaims = "claims.json"\n' >>"machines/$1/config.toml"
	bcd join --config "machines/$1/config.toml" --token-file "$2" >"join-$1.out" 2>&1 ||
		{ cat "join-$1.out" >&2; return 1; }
}
