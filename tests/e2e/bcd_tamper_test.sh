#!/usr/bin/env bash
# Answers bcd must refuse, with a clear error and nothing written: one altered in
# flight (a proxy flips a byte), the answer of an earlier join replayed for another
# CSR, and one signed by another control plane's key.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bcd_lib.sh"
cd "$T"
bcd_server var
bc pools create web >/dev/null
URL=$(sed -n 's/^public_url *= *"\(.*\)"/\1/p' var/server.toml)

echo pass >mode
python3 "$HERE/flip_proxy.py" "$URL" proxy.port mode 2>proxy.log &
PIDS="$PIDS $!"
for _ in $(seq 1 50); do [ -s proxy.port ] && break; sleep 0.1; done
[ -s proxy.port ] || fail "the proxy did not start: $(cat proxy.log)"
PROXY=http://127.0.0.1:$(cat proxy.port)

# through_proxy NAME: NAME's config points at the proxy
through_proxy() { sed -i "s|^server = .*|server = \"$PROXY\"|" "$1/config.toml"; }

refused_nothing_written() { # NAME OUT PATTERN
	[ "$(wc -l <"$2")" = 1 ] || fail "$1: not one line: $(cat "$2")"
	grep -q -- "$3" "$2" || fail "$1: expected /$3/: $(cat "$2")"
	grep -q "nothing was written" "$2" || fail "$1: does not say nothing was written"
	[ -z "$(listing "$1/data")" ] || fail "$1: wrote $(listing "$1/data")"
}

# a byte flipped in flight
bcd_machine m1
through_proxy m1
new_token var/t1
echo flip >mode
if bcd join --config m1/config.toml --token-file var/t1 >flip.out 2>&1; then fail "a flipped answer was accepted"; fi
refused_nothing_written m1 flip.out "the signature does not verify under the pinned join signing key"

# an earlier join's answer replayed to another CSR
bcd_machine m2
through_proxy m2
new_token var/t2
echo record >mode
bcd join --config m2/config.toml --token-file var/t2 >m2.out || fail "recorded join: $(cat m2.out)"
bcd_machine m3
through_proxy m3
new_token var/t3
echo replay >mode
if bcd join --config m3/config.toml --token-file var/t3 >replay.out 2>&1; then fail "a replayed answer was accepted"; fi
refused_nothing_written m3 replay.out "for another CSR"

# an answer signed by another control plane: its encryption key (so it can open the
# token) and its URL, but this control plane's signing key pinned
echo pass >mode
mkdir other && cd other
bcd_server var2
bc() { "$BIN/better-compute" --server "$(sed -n 's/^public_url *= *"\(.*\)"/\1/p' "$T/other/var2/server.toml")" \
	--api-key-file "$T/other/var2/admin.key" "$@"; }
cd "$T"
bc pools create web >/dev/null
bc daemon config --bcd-dir "$T/o" --data-dir "$T/o/data" >/dev/null
new_token var/t4
unset -f bc
bc() { "$BIN/better-compute" "$@"; }
bcd_machine m4
sed -i -e "s|^server = .*|$(grep '^server' o/config.toml)|" \
	-e "s|^join_encryption_key = .*|$(grep '^join_encryption_key' o/config.toml)|" m4/config.toml
if bcd join --config m4/config.toml --token-file var/t4 >other.out 2>&1; then fail "another server's answer was accepted"; fi
refused_nothing_written m4 other.out "join answer: signed by key [0-9a-f]*, expected the pinned"
echo "ok: altered, replayed and foreign answers refused; nothing written"
