#!/usr/bin/env bash
# bcd join --reset: without --yes it prints what it would move, exits 2 and moves
# nothing; with --yes it moves identity.json, node.key, node.key.next and journal.db to
# <name>.reset-<UTC yyyymmddThhmmssZ> (nothing deleted), before reading any token,
# and the machine joins again: the same hardware, so with a reclaim token.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bcd_lib.sh"
cd "$T"
bcd_server var
bc pools create web >/dev/null
bcd_machine m1 6b1d0c3e-aaaa-4000-8000-00000000beef
new_token var/t1
bcd join --config m1/config.toml --token-file var/t1 >join1.out || fail "join: $(cat join1.out)"
NODE=$(status_field m1 nodeId)
echo "journal" >m1/data/journal.db
echo "pending" >m1/data/node.key.next
BEFORE=$(listing m1/data)

rc=0
bcd join --config m1/config.toml --reset >reset.out 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "--reset without --yes exited $rc: $(cat reset.out)"
for f in identity.json node.key node.key.next journal.db; do
	grep -Eq "^would move $T/m1/data/$f to $f\.reset-[0-9]{8}T[0-9]{6}Z$" reset.out ||
		fail "does not say it would move $f: $(cat reset.out)"
done
[ "$(listing m1/data)" = "$BEFORE" ] || fail "--reset without --yes moved something"
bcd status --config m1/config.toml >/dev/null || fail "the identity no longer loads"

# another bcd changing the data directory (its flock, as bcd node holds it while it
# renews): bcd join waits for it and moves nothing meanwhile
new_token var/tlock
# -o: the lock stays with flock itself, so killing it releases the lock at once
flock -o m1/data sleep 60 >/dev/null 2>&1 &
HOLDER=$!
PIDS="$PIDS $HOLDER"
for _ in $(seq 1 50); do flock -n m1/data true || break; sleep 0.1; done
rc=0
timeout 3 "$BIN/bcd" join --config m1/config.toml --reset --yes --token-file var/tlock \
	>lock.out 2>&1 || rc=$?
pkill -P "$HOLDER" sleep 2>/dev/null || true
kill "$HOLDER" 2>/dev/null || true
wait "$HOLDER" 2>/dev/null || true
[ "$rc" = 124 ] || fail "bcd join did not wait for the data directory's lock (exit $rc): $(cat lock.out)"
grep -q "waiting for another bcd changing" lock.out || fail "no word of the wait: $(cat lock.out)"
[ "$(listing m1/data)" = "$BEFORE" ] || fail "bcd join moved files under another bcd's lock"

# --yes with a token that cannot join (same hardware, no reclaim): the files are moved
# first, the join is refused, and a later bcd join joins
new_token var/t2
rc=0
bcd join --config m1/config.toml --reset --yes --token-file var/t2 >reset2.out 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "a join refused after the reset exited $rc: $(cat reset2.out)"
for f in identity.json node.key node.key.next journal.db; do
	ls m1/data | grep -Eq "^$f\.reset-[0-9]{8}T[0-9]{6}Z$" || fail "$f not moved: $(listing m1/data)"
	[ ! -e "m1/data/$f" ] || fail "$f still there"
done
grep -q "join refused by the server" reset2.out || fail "refusal: $(cat reset2.out)"
bc --json events list --type security.join.refused | grep -q reclaim || fail "no reclaim refusal event"

new_token var/t3 --allow-reclaim
sleep 1 # a second reset gets another timestamp
bcd join --config m1/config.toml --reset --yes --token-file var/t3 >reset3.out 2>&1 ||
	fail "rejoin with a reclaim token: $(cat reset3.out)"
grep -q "^joined as node_" reset3.out || fail "no 'joined as': $(cat reset3.out)"
[ "$(status_field m1 nodeId)" = "$NODE" ] || echo "note: reclaimed as $(status_field m1 nodeId), was $NODE"
[ "$(ls m1/data | grep -c '\.reset-')" -ge 4 ] || fail "a moved file was deleted: $(listing m1/data)"
grep -q "^journal$" m1/data/journal.db.reset-* || fail "journal.db's content lost"
bcd status --config m1/config.toml >/dev/null || fail "the new identity does not load"
echo "ok: --reset printed and exited 2; --reset --yes moved the files; rejoined as $(status_field m1 nodeId)"
