#!/usr/bin/env bash
# The server links one crypto library, OpenSSL: no GnuTLS and no libmicrohttpd (whose
# TLS is GnuTLS) among the libraries it names (readelf NEEDED), and no library that
# ldd resolves for it pulls GnuTLS in (libcurl, which brought it through librtmp and
# libldap, is gone; libpq is loaded only for a postgres:// store). Prints what it found.
. "$(dirname "$0")/lib.sh"
B="$BIN/better-compute"
readelf -d "$B" | grep NEEDED >needed.txt
cat needed.txt
grep -q 'libssl\.so' needed.txt || fail "the server does not link OpenSSL's libssl"
grep -q -i 'gnutls' needed.txt && fail "the server links GnuTLS itself"
grep -q -i 'microhttpd' needed.txt && fail "the server links libmicrohttpd"
ldd "$B" >ldd.txt
grep -q -i 'microhttpd' ldd.txt && fail "libmicrohttpd is loaded: $(grep -i microhttpd ldd.txt)"
for lib in $(awk '/=>/ && $3 ~ /^\// {print $3}' ldd.txt); do
	if readelf -d "$lib" 2>/dev/null | grep NEEDED | grep -q -i gnutls; then
		fail "$(basename "$lib") pulls GnuTLS into the server"
	fi
done
grep -q -i 'gnutls' ldd.txt && fail "GnuTLS is loaded: $(grep -i gnutls ldd.txt)"
echo "ok: the server's TLS is OpenSSL's; no libmicrohttpd, no GnuTLS"
