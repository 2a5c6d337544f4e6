#!/usr/bin/env python3
"""A relying party written apart from the server's code: it fetches the trust bundle,
parses it as the SPIFFE Trust Domain and Bundle format says (section 4: a JWK set with
spiffe_sequence, spiffe_refresh_hint and keys; an x509-svid key carries its CA in x5c,
and its kty/crv/x/y are that certificate's key) and as PEM, and verifies node
certificates (X.509-SVIDs) against it with Python's `cryptography`, the way an mTLS
service would: the issuer's signature, the validity times, a CA certificate, and one
SPIFFE ID in the trust domain.

  bundle_client.py URL TRUST_DOMAIN CERT... [--cafile F] [--refuse]

prints one line of JSON: the sequence, the refresh hint, the number of CAs and whether
the PEM bundle holds the same CAs. Exit 0 when every CERT verifies (with --refuse: when
every CERT is refused), 1 otherwise, with the reason on stderr."""
import base64
import datetime
import json
import ssl
import sys
import urllib.request

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec


class Refused(Exception):
    pass


def fetch(url, cafile):
    ctx = ssl.create_default_context(cafile=cafile) if url.startswith("https://") else None
    with urllib.request.urlopen(url, context=ctx, timeout=30) as r:
        if r.status != 200:
            raise Refused(f"{url}: HTTP {r.status}")
        return r.read()


def b64url_int(s):
    if not isinstance(s, str) or "=" in s:
        raise Refused("x/y: not base64url without padding")
    raw = base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))
    if len(raw) != 32:
        raise Refused("x/y: not 32 bytes")
    return int.from_bytes(raw, "big")


def parse_spiffe(body):
    doc = json.loads(body)
    if not isinstance(doc, dict) or not isinstance(doc.get("keys"), list):
        raise Refused("not a JWK set: no keys array")
    seq, hint = doc.get("spiffe_sequence"), doc.get("spiffe_refresh_hint")
    if not isinstance(seq, int) or seq < 0:
        raise Refused("spiffe_sequence is not a non-negative integer")
    if not isinstance(hint, int) or hint <= 0:
        raise Refused("spiffe_refresh_hint is not a positive integer")
    cas = []
    for k in doc["keys"]:
        if k.get("use") != "x509-svid":
            continue  # section 4.2.2: other uses are not for X.509-SVIDs
        x5c = k.get("x5c")
        if not isinstance(x5c, list) or len(x5c) != 1:
            raise Refused("an x509-svid key must carry exactly one certificate in x5c")
        ca = x509.load_der_x509_certificate(base64.b64decode(x5c[0], validate=True))
        pub = ca.public_key()
        if k.get("kty") != "EC" or k.get("crv") != "P-256":
            raise Refused("an x509-svid key that is not EC P-256")
        if not isinstance(pub, ec.EllipticCurvePublicKey) or pub.curve.name != "secp256r1":
            raise Refused("x5c holds a certificate whose key is not P-256")
        nums = pub.public_numbers()
        if nums.x != b64url_int(k.get("x")) or nums.y != b64url_int(k.get("y")):
            raise Refused("the key's x/y are not its certificate's key")
        cas.append(ca)
    if not cas:
        raise Refused("no x509-svid key in the bundle")
    return seq, hint, cas


def parse_pem(body):
    text, cas, end = body.decode("ascii"), [], "-----END CERTIFICATE-----"
    for part in text.split(end)[:-1]:
        cas.append(x509.load_pem_x509_certificate((part.strip() + "\n" + end + "\n").encode()))
    if not cas or text.split(end)[-1].strip():
        raise Refused("PEM bundle: no certificate, or text after the last one")
    return cas


def validity(cert):
    """notBefore and notAfter as aware UTC times (cryptography 42 added the _utc ones)."""
    if hasattr(cert, "not_valid_before_utc"):
        return cert.not_valid_before_utc, cert.not_valid_after_utc
    utc = datetime.timezone.utc
    return cert.not_valid_before.replace(tzinfo=utc), cert.not_valid_after.replace(tzinfo=utc)


def verify(cert, cas, td, now):
    for ca in cas:
        if ca.subject != cert.issuer:
            continue
        bc = ca.extensions.get_extension_for_class(x509.BasicConstraints).value
        if not bc.ca:
            raise Refused("the issuer in the bundle is not a CA")
        try:
            ca.public_key().verify(cert.signature, cert.tbs_certificate_bytes,
                                   ec.ECDSA(cert.signature_hash_algorithm))
        except InvalidSignature:
            continue
        nb, na = validity(cert)
        if not (nb <= now <= na):
            raise Refused(f"not valid now ({nb} .. {na})")
        uris = cert.extensions.get_extension_for_class(
            x509.SubjectAlternativeName).value.get_values_for_type(x509.UniformResourceIdentifier)
        ids = [u for u in uris if u.startswith("spiffe://")]
        if len(ids) != 1 or not ids[0].startswith(f"spiffe://{td}/"):
            raise Refused(f"not one SPIFFE ID in {td}: {ids}")
        return ids[0]
    raise Refused("no CA in the bundle signed it")


def main(argv):
    refuse = "--refuse" in argv
    argv = [a for a in argv if a != "--refuse"]
    cafile = None
    if "--cafile" in argv:
        i = argv.index("--cafile")
        cafile = argv[i + 1]
        del argv[i:i + 2]
    url, td, certs = argv[0].rstrip("/"), argv[1], argv[2:]
    seq, hint, cas = parse_spiffe(fetch(url + "/bundle/spiffe", cafile))
    pem_cas = parse_pem(fetch(url + "/bundle", cafile))
    same = sorted(c.public_bytes(serialization.Encoding.DER) for c in cas) == sorted(
        c.public_bytes(serialization.Encoding.DER) for c in pem_cas)
    now = datetime.datetime.now(datetime.timezone.utc)
    ok = True
    for path in certs:
        with open(path, "rb") as f:
            cert = x509.load_pem_x509_certificate(f.read())
        try:
            sid = verify(cert, cas, td, now)
            print(f"{path}: verified {sid}", file=sys.stderr)
            ok = ok and not refuse
        except Refused as e:
            print(f"{path}: refused: {e}", file=sys.stderr)
            ok = ok and refuse
    print(json.dumps({"sequence": seq, "refreshHint": hint, "cas": len(cas), "pemSame": same}))
    return 0 if ok and same else 1


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Refused as e:
        print(f"bundle refused: {e}", file=sys.stderr)
        sys.exit(1)
