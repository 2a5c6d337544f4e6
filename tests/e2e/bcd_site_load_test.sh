#!/usr/bin/env bash
# bcd site under load, a real process on loopback: clients sending a byte a second are
# cut at the head deadline, answered nothing, while other clients get their scripts
# and the boot lease is renewed all along (never lost, its epoch unchanged); a flood
# of connections from one address gets 503 past max_connections_per_client while
# another address is served; requests whose clients are gone once they are whole get
# no token; and bcd ramdisk holds bc.server to the config's rule: http off loopback is
# refused before anything is sent, the token left for the boot that follows.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bcd_lib.sh"
cd "$T"
bcd_server var '[attestors.discovery]
approval = "never"'
SITE=$(bc --json sites create dc1 | json_get '["id"]')
bc tokens create --role site --site dc1 --out var/ts >/dev/null || fail "site token"
bcd_machine s1
bcd join --config s1/config.toml --role site --token-file var/ts >s1.join || fail "site join: $(cat s1.join)"
PORT=$(free_port)
cat >>s1/config.toml <<TOML

[site]
id = "$SITE"
listen = "127.0.0.1:$PORT"
kernel = "http://boot.example/vmlinuz"
initrd = "http://boot.example/initrd.img"
unknown_machines = "true"
lease_ttl_seconds = "3"
header_timeout_seconds = 2
request_timeout_seconds = 4
max_connections = 16
max_connections_per_client = 4
TOML
CLIENTS="$HERE/bcd_site_clients.py"
wait_for() {
	for _ in $(seq 1 100); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
	cat "$1" >&2; fail "no \"$2\" in $1"
}
# script MAC: a script for MAC from 127.0.0.1, with a bound far above any deadline
script() { curl -fsS --max-time 60 "http://127.0.0.1:$PORT/boot.ipxe?mac=$1"; }
epoch() { bc --json sites get "$SITE" | json_get '["lease"]["epoch"]'; }

# the limits are checked against each other
cp s1/config.toml s1/bad.toml
sed -i 's/^max_connections_per_client = 4/max_connections_per_client = 17/' s1/bad.toml
bcd site --config s1/bad.toml >bad.out 2>&1 && fail "17 per client of 16 taken"
grep -q "site.max_connections_per_client (17) is more than max_connections (16)" bad.out || fail "bad: $(cat bad.out)"
sed -i 's/^max_connections_per_client = 17/max_connections_per_client = 0/' s1/bad.toml
bcd site --config s1/bad.toml >bad.out 2>&1 && fail "0 per client taken"
grep -q "site.max_connections_per_client: expected" bad.out || fail "bad: $(cat bad.out)"

"$BIN/bcd" site --config s1/config.toml 2>s1.log &
SITE_PID=$!
PIDS="$PIDS $SITE_PID"
wait_for s1.log "lease held"
E0=$(epoch)

# 1. slow clients: three addresses, each one connection after another sending a byte a
# second (a head takes about 80 s that way); meanwhile others are answered
TRICKLERS=""
for i in 1 2 3; do
	python3 "$CLIENTS" trickle "$PORT" "127.0.1.$i" 1 3 "trickle$i.out" &
	TRICKLERS="$TRICKLERS $!"
done
PIDS="$PIDS $TRICKLERS"
for i in 1 2 3 4 5 6; do
	script "52:54:00:00:01:0$i" >ok$i.ipxe || fail "script $i while slow clients trickle"
	grep -q "bc.token=bct_" ok$i.ipxe || fail "script $i: $(cat ok$i.ipxe)"
	sleep 1
done
for p in $TRICKLERS; do wait "$p" || fail "a trickling client failed"; done
cat trickle*.out
[ "$(cat trickle*.out | wc -l)" = 9 ] || fail "9 slow connections, $(cat trickle*.out | wc -l) ended"
# each cut before its head was whole: answered nothing, and far within the 80 s it takes
if grep -v "answered=0$" trickle*.out; then fail "a slow client was answered"; fi
awk '{split($2, a, "="); if (a[2] > 60) exit 1}' trickle*.out || fail "a slow client held on past 60 s"
grep -q "cut: no whole request head in time" s1.log || fail "no cut in the log: $(cat s1.log)"
if grep -q "lease lost" s1.log; then fail "the lease lapsed: $(cat s1.log)"; fi
[ "$(epoch)" = "$E0" ] || fail "the lease's epoch moved from $E0 to $(epoch)"
echo "slow clients cut (9 connections, none answered); 6 scripts served; lease held at epoch $E0"

# 2. a flood from one address: 12 at once, 4 admitted (then cut), 8 refused 503; another
# address is answered meanwhile
python3 "$CLIENTS" flood "$PORT" 127.0.2.1 12 >flood.out &
FLOOD=$!
PIDS="$PIDS $FLOOD"
script 52:54:00:00:02:01 >flood.ipxe || fail "script during the flood"
grep -q "bc.token=bct_" flood.ipxe || fail "script during the flood: $(cat flood.ipxe)"
wait "$FLOOD" || fail "the flood failed"
grep -q "^opened=12 refused_503=8 cut=4$" flood.out || fail "flood: $(cat flood.out)"
grep -q "127.0.2.1 has 4 connections open (max_connections_per_client)" s1.log || fail "no cap in the log"
echo "flood: $(cat flood.out)"

# 3. clients gone once their request is whole: no token minted, nothing served
GONE_MAC=52:54:00:00:03:01
# (one address each: a burst from one address meets its cap first)
for i in $(seq 1 10); do
	python3 "$CLIENTS" gone "$PORT" "127.0.3.$i" 1 "$GONE_MAC" >>gone.out || fail "gone client $i"
done
script 52:54:00:00:03:02 >after.ipxe || fail "script after the gone clients" # they were all looked at
if grep -q "served $GONE_MAC" s1.log; then fail "a token was minted for a gone client: $(cat s1.log)"; fi
grep -q "gone before its answer: no token minted" s1.log || fail "no gone client in the log: $(cat s1.log)"
script "$GONE_MAC" >gone.ipxe || fail "the same MAC, asked properly"
grep -q "served $GONE_MAC" s1.log || fail "the MAC is served when its client stays"
echo "10 gone clients: no token; the MAC served when its client stays"

# 4. bcd ramdisk: bc.server off loopback over http is refused, nothing spent
MAC=52:54:00:00:04:01
bc machines commission --site "$SITE" --mac "$MAC" >/dev/null || fail "commission"
script "$MAC" >r1.ipxe || fail "script"
sed -n 's/^kernel [^ ]* //p' r1.ipxe >r1.cmdline
[ -s r1.cmdline ] || fail "no kernel line: $(cat r1.ipxe)"
bcd_machine r1
cat >r1/claims.json <<JSON
{"product_uuid":"0d9a3c52-0a4e-4d7b-9c1e-2f3a4b5c6d7e","serial":"SN-r1","macs":["$MAC"],"hostname":"r1","arch":"x86_64"}
JSON
SERVER_URL=$(sed -n 's/^public_url *= *"\(.*\)"/\1/p' var/server.toml)
for bad in http://192.0.2.1:8443 http://cp.example "http://127.0.0.1.example:1"; do
	printf '%s bc.server=%s\n' "$(cat r1.cmdline)" "$bad" >bad.cmdline
	bcd ramdisk --config r1/config.toml --cmdline bad.cmdline >bad.out 2>&1 && fail "bc.server=$bad taken"
	grep -q "bad.cmdline: bc.server: must be https://, or http:// on a loopback address" bad.out ||
		fail "bc.server=$bad: $(cat bad.out)"
done
printf '%s bc.server=%s\n' "$(cat r1.cmdline)" "$SERVER_URL" >r1s.cmdline
bcd ramdisk --config r1/config.toml --cmdline r1s.cmdline >r1.out 2>&1 || fail "ramdisk with a loopback bc.server: $(cat r1.out)"
grep -q "joined as node_.* (ramdisk)" r1.out || fail "r1: $(cat r1.out)"
echo "bcd ramdisk: bc.server over http off loopback refused (3 URLs), the token then joined via $SERVER_URL"

# all of it, and the boot server still ends cleanly: the lease released, status 0
kill -TERM "$SITE_PID"
wait "$SITE_PID" || fail "bcd site ended with status $?: $(tail -5 s1.log)"
PIDS=$(echo "$PIDS" | sed "s/ $SITE_PID//")
grep -q "lease released" s1.log || fail "no release: $(tail -5 s1.log)"
