#!/usr/bin/env bash
# Backups on SQLite (issue 26, item 6): `store backup` while joins run (SQLite's online
# backup API): a file of mode 0600 that passes integrity_check, refused over an
# existing file without --force. Restored into a new directory and served: every join
# answered before the backup began is in it, the machines joined before renew against
# the restored server, and new joins work. `store backup` and `store migrate --check`
# on a missing database say so.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bcd_lib.sh"
cd "$T"
PORT=$(free_port)
bc init --dir var --listen "127.0.0.1:$PORT" >init.out
start_server var
ORIG_PID=$SERVER_PID
bc pools create web >/dev/null
bc daemon config --out pins.json
for m in m1 m2; do
	bcd_machine $m
	new_token "var/t-$m"
	bcd join --config $m/config.toml --token-file "var/t-$m" >"$m.join" || fail "bcd join $m: $(cat $m.join)"
done
for t in 1 2 3 4; do new_token "tok$t" --uses 20; done

# joins running while the backup is taken: 4 streams of bc-join
stream() {
	local s=$1 i
	for i in $(seq 1 20); do
		"$BIN/bc-join" --pins pins.json --token-file "tok$s" --out "j$s-$i" \
			--product-uuid "$(printf '6b1d0c3e-bbbb-4000-8000-%06d%06d' "$s" "$i")" >"join$s-$i.out" 2>&1 || true
	done
}
SPIDS=""
for s in 1 2 3 4; do
	stream $s &
	SPIDS="$SPIDS $!"
done
PIDS="$PIDS $SPIDS"
for _ in $(seq 1 300); do
	[ "$(grep -l 'joined as node_' join*.out 2>/dev/null | wc -l)" -ge 8 ] && break
	sleep 0.05
done
# the joins answered before the backup began must be in it
grep -l 'joined as node_' join*.out | xargs sed -n 's/.*joined as \(node_[0-9a-z]*\).*/\1/p' | sort >before.txt
bc store backup --config var/server.toml --out backup.db >backup.out || fail "store backup: $(cat backup.out)"
DURING=$(for p in $SPIDS; do kill -0 "$p" 2>/dev/null && echo x; done | wc -l)
cat backup.out
for p in $SPIDS; do wait "$p"; done
PIDS=$(echo "$PIDS" | sed "s/ [0-9]*//g; s/^ *//")" $ORIG_PID"
grep -q "^backed up to backup.db ([0-9]* bytes, mode 0600)" backup.out || fail "store backup said: $(cat backup.out)"
[ "$(stat -c %a backup.db)" = 600 ] || fail "backup.db is mode $(stat -c %a backup.db), not 0600"
[ "$(sqlite3 backup.db 'PRAGMA integrity_check')" = ok ] || fail "the backup fails integrity_check"
ls -A | grep -q '^\.backup\.db\.' && fail "a temporary file left: $(ls -A)"
echo "backup taken while $DURING of 4 join streams ran; $(wc -l <before.txt) joins answered before it"

# an existing file: refused without --force, replaced with it
rc=0
bc store backup --config var/server.toml --out backup.db >again.out 2>&1 || rc=$?
[ "$rc" = 1 ] && grep -q "backup.db exists; give --force" again.out || fail "overwrite: rc $rc, $(cat again.out)"
cp backup.db keep.db
bc store backup --config var/server.toml --out keep.db --force >force.out || fail "--force: $(cat force.out)"
[ "$(stat -c %a keep.db)" = 600 ] || fail "--force left mode $(stat -c %a keep.db)"

# a missing database is said, not created
sed "s|^database *=.*|database = \"$T/nothing/bc.db\"|" var/server.toml >missing.toml
for cmd in "store backup --out x.db" "store migrate --check"; do
	rc=0
	bc $cmd --config missing.toml >missing.out 2>&1 || rc=$?
	[ "$rc" = 1 ] && grep -q "does not exist" missing.out || fail "$cmd on a missing database: rc $rc, $(cat missing.out)"
done
[ ! -e nothing ] && [ ! -e x.db ] || fail "a missing database was created"
stop_server var

# restore: a new directory with the server's keys and the backup as its store
mkdir restored
cp var/secret var/pki.bundle var/admin.key restored/
cp backup.db restored/bc.db
P2=$(free_port)
sed "s|127.0.0.1:$PORT|127.0.0.1:$P2|g" var/server.toml >restored/server.toml
start_server restored
export BC_SERVER="http://127.0.0.1:$P2" BC_API_KEY_FILE=restored/admin.key
for n in $(cat before.txt); do
	bc nodes get "$n" >/dev/null || fail "$n, answered before the backup, is not in the restored store"
done
[ "$(sqlite3 restored/bc.db 'PRAGMA integrity_check')" = ok ] || fail "the restored store fails integrity_check"
# the machines renew against the restored server
for m in m1 m2; do
	sed -i "s|^server = .*|server = \"http://127.0.0.1:$P2\"|" $m/config.toml
	S0=$(status_field $m serial)
	BCD_RENEW_AFTER=1s "$BIN/bcd" node --config $m/config.toml >"$m.node.log" 2>&1 &
	NP=$!
	PIDS="$PIDS $NP"
	for _ in $(seq 1 300); do
		[ "$(status_field $m serial)" != "$S0" ] && break
		sleep 0.1
	done
	kill -TERM "$NP"; wait "$NP" || true
	PIDS=$(echo "$PIDS" | sed "s/ $NP//")
	[ "$(status_field $m serial)" != "$S0" ] || fail "$m did not renew against the restored store: $(cat $m.node.log)"
done
bcd_machine m3
bc tokens create --role node --pool web --out restored/t3 >/dev/null
bcd join --config m3/config.toml --token-file restored/t3 >m3.join || fail "a new join on the restored store: $(cat m3.join)"
NODES=$(sqlite3 restored/bc.db 'SELECT COUNT(*) FROM nodes')
stop_server restored
echo "ok: backed up while joins ran ($(stat -c %s backup.db) bytes), restored: $(wc -l <before.txt) joins answered before the backup present, m1 and m2 renewed, m3 joined; $NODES nodes"
