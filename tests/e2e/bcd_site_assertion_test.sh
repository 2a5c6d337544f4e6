#!/usr/bin/env bash
# bcd site's signed assertion, field by field (spec: "Both halves in bcd"): the test
# fetches iPXE scripts from a real bcd site and decodes bc.assertion (a
# SignedDiscoveryAssertion, base64url) from their kernel line. The site, the signer
# (this site node), its lease epoch, the MAC (lower-case), the IP from iPXE's query
# else the connection's, the product UUID from the query else the boot entry's, the
# workflow, issued_at in server time, and not_after at most 15 minutes after it and
# never past the boot entry's notAfter.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bcd_lib.sh"
cd "$T"
bcd_server var '[attestors.discovery]'
SITE=$(bc --json sites create dc1 | json_get '["id"]')
bc tokens create --role site --site dc1 --uses 1 --out var/ts >/dev/null || fail "site token"

bcd_machine s1
bcd join --config s1/config.toml --role site --token-file var/ts >s1.join || fail "site join: $(cat s1.join)"
SIGNER=$(sed -n 's/^joined as \(node_[0-9a-z]*\) (site)$/\1/p' s1.join)
[ -n "$SIGNER" ] || fail "joined as: $(cat s1.join)"
PORT=$(free_port)
cat >>s1/config.toml <<TOML

[site]
id = "$SITE"
listen = "127.0.0.1:$PORT"
kernel = "http://boot.example/vmlinuz"
initrd = "http://boot.example/initrd.img"
cmdline = "console=ttyS0"
TOML
"$BIN/bcd" site --config s1/config.toml 2>s1.log &
PIDS="$PIDS $!"
for _ in $(seq 1 100); do grep -q "lease held" s1.log 2>/dev/null && break; sleep 0.1; done
grep -q "lease held" s1.log || fail "bcd site did not take the lease: $(cat s1.log)"

# two boot entries: one ending in 5 minutes, one in an hour
UUID_E=7e0c1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b
UUID_Q=0d9e8f7a-6b5c-4d3e-8f2a-1b0c9d8e7f6a
WF_SHORT=$(bc --json machines commission --site "$SITE" --mac 52-54-00-AA-00-01 --product-uuid "$UUID_E" --ttl 5m | json_get '["id"]')
WF_LONG=$(bc --json machines commission --site "$SITE" --mac 52:54:00:aa:00:02 --ttl 1h | json_get '["id"]')
entry_end() { bc --json workflows get "$1" | json_get '["data"]["bootEntry"]["notAfter"]'; }
END_SHORT=$(entry_end "$WF_SHORT")
[ -n "$WF_SHORT" ] && [ -n "$WF_LONG" ] && [ -n "$END_SHORT" ] || fail "commission: $WF_SHORT $WF_LONG $END_SHORT"

now_ms() { python3 -c 'import time; print(int(time.time() * 1000))'; }
# fields QUERY: the script for /boot.ipxe?QUERY, its assertion decoded as
# name=value lines (a protobuf reader of the two messages, no library)
fields() {
	curl -fsS "http://127.0.0.1:$PORT/boot.ipxe?$1" >script.ipxe || fail "script for $1"
	python3 - script.ipxe <<'PY'
import base64, re, sys
text = open(sys.argv[1]).read()
m = re.search(r"bc\.assertion=([A-Za-z0-9_-]+)", text)
if not m:
    sys.exit("no bc.assertion in: " + text)
raw = base64.urlsafe_b64decode(m.group(1) + "=" * (-len(m.group(1)) % 4))

def read(buf):
    out, i = {}, 0
    def varint():
        nonlocal i
        v = s = 0
        while True:
            b = buf[i]; i += 1
            v |= (b & 0x7f) << s; s += 7
            if b < 0x80:
                return v
    while i < len(buf):
        key = varint(); num, wt = key >> 3, key & 7
        if wt == 0:
            out[num] = varint()
        elif wt == 2:
            n = varint(); out[num] = buf[i:i + n]; i += n
        else:
            sys.exit("wire type %d" % wt)
    return out

signed = read(raw)
a = read(signed[1])
assert len(signed[2]) == 64, "signature of %d bytes" % len(signed[2])
names = {1: "site", 2: "signer", 3: "epoch", 4: "mac", 5: "ip", 6: "uuid", 7: "workflow",
         8: "issued_at", 9: "not_after"}
for num, name in names.items():
    v = a.get(num, b"")
    print("%s=%s" % (name, v.decode() if isinstance(v, bytes) else v))
PY
}
field() { sed -n "s/^$2=//p" "$1"; }

# 1. the IP iPXE sent, the entry's UUID, an entry that ends before 15 minutes
T0=$(now_ms)
fields "mac=52:54:00:aa:00:01&ip=192.0.2.7" >a1.txt || fail "decode: $(cat a1.txt)"
T1=$(now_ms)
cat a1.txt
[ "$(field a1.txt site)" = "$SITE" ] || fail "site $(field a1.txt site)"
[ "$(field a1.txt signer)" = "$SIGNER" ] || fail "signer $(field a1.txt signer), not $SIGNER"
[ "$(field a1.txt epoch)" -ge 1 ] || fail "epoch $(field a1.txt epoch)"
[ "$(field a1.txt mac)" = 52:54:00:aa:00:01 ] || fail "mac $(field a1.txt mac)"
[ "$(field a1.txt ip)" = 192.0.2.7 ] || fail "ip $(field a1.txt ip), not the query's"
[ "$(field a1.txt uuid)" = "$UUID_E" ] || fail "uuid $(field a1.txt uuid), not the entry's"
[ "$(field a1.txt workflow)" = "$WF_SHORT" ] || fail "workflow $(field a1.txt workflow)"
ISSUED=$(field a1.txt issued_at)
# server time: bcd site's clock set by the control plane's, on this same machine
[ "$ISSUED" -ge $((T0 - 2000)) ] && [ "$ISSUED" -le $((T1 + 2000)) ] || fail "issued_at $ISSUED outside [$T0, $T1]"
[ "$(field a1.txt not_after)" = "$END_SHORT" ] || fail "not_after $(field a1.txt not_after), not the entry's $END_SHORT"

# 2. no IP in the query: the connection's; the UUID iPXE sent; 15 minutes at most
fields "mac=52:54:00:aa:00:02&uuid=$UUID_Q" >a2.txt || fail "decode: $(cat a2.txt)"
cat a2.txt
[ "$(field a2.txt ip)" = 127.0.0.1 ] || fail "ip $(field a2.txt ip), not the connection's"
[ "$(field a2.txt uuid)" = "$UUID_Q" ] || fail "uuid $(field a2.txt uuid), not the query's"
[ "$(field a2.txt workflow)" = "$WF_LONG" ] || fail "workflow $(field a2.txt workflow)"
LIFE=$(($(field a2.txt not_after) - $(field a2.txt issued_at)))
[ "$LIFE" -le 900000 ] && [ "$LIFE" -ge 890000 ] || fail "an assertion of $LIFE ms, not 15 minutes"
echo "ok: bcd site's assertion: site, signer $SIGNER, MAC, IP (query, connection), UUID (entry, query), workflow, issued_at $ISSUED, not_after (entry's, 15 minutes)"
