#!/usr/bin/env python3
"""A fake cloud metadata server on loopback for the cloud-iid end-to-end test, with
keys it makes itself (never a real provider's).

  cloud_metadata.py serve DIR PORTFILE   writes DIR/gcp.jwks, DIR/aws.pem and DIR/oidc.pem,
      then serves on 127.0.0.1 (its port into PORTFILE):
      GCP  GET /computeMetadata/v1/instance/service-accounts/default/identity
           ?audience=A&format=full (Metadata-Flavor: Google): an RS256 token for A
      AWS  PUT /latest/api/token (X-aws-ec2-metadata-token-ttl-seconds), then
           /latest/dynamic/instance-identity/{document,signature,rsa2048} with
           X-aws-ec2-metadata-token
      OIDC GET /oidc/jwks: the OIDC issuer's key set
      Every path may start with /i<N>: the same endpoints for another instance (ids
      with "-N"), so one server stands for several VMs.
  cloud_metadata.py oidc-token DIR       prints an ES256 token for $BCD_AUDIENCE
"""
import base64
import datetime
import http.server
import json
import os
import re
import secrets
import sys
import time
import urllib.parse

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa, utils
from cryptography.hazmat.primitives.serialization import pkcs7
from cryptography.x509.oid import NameOID

PROJECT, INSTANCE, ACCOUNT, REGION = "e2e-project", "4242", "123456789012", "us-east-1"


def b64u(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def uint(n):
    return n.to_bytes((n.bit_length() + 7) // 8, "big")


def jwt(key, kid, alg, claims):
    h = b64u(json.dumps({"alg": alg, "kid": kid, "typ": "JWT"}).encode())
    p = b64u(json.dumps(claims).encode())
    data = f"{h}.{p}".encode()
    if alg == "RS256":
        sig = key.sign(data, padding.PKCS1v15(), hashes.SHA256())
    else:
        r, s = utils.decode_dss_signature(key.sign(data, ec.ECDSA(hashes.SHA256())))
        sig = r.to_bytes(32, "big") + s.to_bytes(32, "big")
    return f"{h}.{p}.{b64u(sig)}"


def pem_key(key):
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def load_key(path):
    with open(path, "rb") as f:
        return serialization.load_pem_private_key(f.read(), None)


def make_keys(d):
    gcp = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    aws = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    oidc = ec.generate_private_key(ec.SECP256R1())
    n = gcp.public_key().public_numbers()
    with open(os.path.join(d, "gcp.jwks"), "w") as f:
        json.dump({"keys": [{"kty": "RSA", "kid": "e2e-g1", "alg": "RS256", "use": "sig",
                             "n": b64u(uint(n.n)), "e": b64u(uint(n.e))}]}, f)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "e2e aws us-east-1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(aws.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=1)).sign(aws, hashes.SHA256()))
    with open(os.path.join(d, "aws.pem"), "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    for name_, key in (("gcp-key.pem", gcp), ("aws-key.pem", aws), ("oidc.pem", oidc)):
        with open(os.path.join(d, name_), "wb") as f:
            f.write(pem_key(key))
    return gcp, aws, cert, oidc


def oidc_jwks(key):
    pub = key.public_key().public_numbers()
    return {"keys": [{"kty": "EC", "kid": "e2e-o1", "crv": "P-256", "alg": "ES256",
                      "x": b64u(pub.x.to_bytes(32, "big")), "y": b64u(pub.y.to_bytes(32, "big"))}]}


def lines(b):
    s = base64.b64encode(b).decode()
    return "\n".join(s[i:i + 64] for i in range(0, len(s), 64))


class Handler(http.server.BaseHTTPRequestHandler):
    sessions = set()

    def log_message(self, fmt, *args):
        sys.stderr.write("meta: " + fmt % args + "\n")

    def answer(self, status, body, ctype="text/plain"):
        b = body.encode() if isinstance(body, str) else body
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)

    def instance(self):
        """Strips a leading /i<N> from self.path: "" or "-N"."""
        m = re.match(r"^/i([0-9]+)(/.*)$", self.path)
        if m is None:
            return ""
        self.path = m.group(2)
        return "-" + m.group(1)

    def do_PUT(self):
        self.instance()
        if self.path != "/latest/api/token" or not self.headers.get(
                "X-aws-ec2-metadata-token-ttl-seconds"):
            return self.answer(400, "bad request")
        t = secrets.token_urlsafe(24)
        Handler.sessions.add(t)
        self.answer(200, t)

    def do_GET(self):
        n = self.instance()
        u = urllib.parse.urlsplit(self.path)
        if u.path == "/computeMetadata/v1/instance/service-accounts/default/identity":
            return self.gcp(urllib.parse.parse_qs(u.query), n)
        if u.path.startswith("/latest/dynamic/instance-identity/"):
            return self.aws(u.path.rsplit("/", 1)[1], n)
        if u.path == "/oidc/jwks":
            return self.answer(200, json.dumps(oidc_jwks(self.server.oidc)), "application/json")
        self.answer(404, "not found")

    def gcp(self, q, n):
        if self.headers.get("Metadata-Flavor") != "Google":
            return self.answer(403, "Metadata-Flavor: Google required")
        if q.get("format") != ["full"] or len(q.get("audience", [])) != 1:
            return self.answer(400, "audience and format=full required")
        now = int(time.time())
        claims = {"iss": "https://accounts.google.com", "aud": q["audience"][0], "azp": "1",
                  "email": "vm@e2e.test", "iat": now, "exp": now + 3600, "sub": "1",
                  "google": {"compute_engine": {
                      "project_id": PROJECT, "project_number": 42, "zone": "europe-west1-b",
                      "instance_id": INSTANCE + n, "instance_name": "vm-e2e",
                      "instance_creation_timestamp": now - 60}}}
        self.answer(200, jwt(self.server.gcp, "e2e-g1", "RS256", claims))

    def aws(self, part, n):
        if self.headers.get("X-aws-ec2-metadata-token") not in Handler.sessions:
            return self.answer(401, "IMDSv2 session token required")
        doc = self.server.documents.setdefault(n, aws_document(n))
        if part == "document":
            return self.answer(200, doc, "application/json")
        if part == "signature":
            return self.answer(200, lines(self.server.aws.sign(doc, padding.PKCS1v15(),
                                                               hashes.SHA256())))
        if part == "rsa2048":
            p7 = (pkcs7.PKCS7SignatureBuilder().set_data(doc)
                  .add_signer(self.server.cert, self.server.aws, hashes.SHA256())
                  .sign(serialization.Encoding.DER,
                        [pkcs7.PKCS7Options.Binary, pkcs7.PKCS7Options.NoCerts]))
            return self.answer(200, lines(p7))
        self.answer(404, "not found")


def aws_document(n):
    pending = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=2)
    return json.dumps({"accountId": ACCOUNT, "architecture": "x86_64",
                       "availabilityZone": REGION + "a", "imageId": "ami-e2e",
                       "instanceId": "i-0e2e" + n, "instanceType": "t3.micro",
                       "pendingTime": pending.strftime("%Y-%m-%dT%H:%M:%SZ"),
                       "privateIp": "10.0.0.7", "region": REGION, "version": "2017-09-30"},
                      indent=2).encode()


def serve(d, portfile):
    gcp, aws, cert, oidc = make_keys(d)
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.gcp, srv.aws, srv.cert, srv.oidc, srv.documents = gcp, aws, cert, oidc, {}
    with open(portfile + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(portfile + ".tmp", portfile)
    srv.serve_forever()


def oidc_token(d):
    now = int(time.time())
    key = load_key(os.path.join(d, "oidc.pem"))
    claims = {"iss": "https://oidc.e2e", "aud": os.environ["BCD_AUDIENCE"], "iat": now,
              "exp": now + 300, "project": "lab", "vm": "vm-7"}
    print(jwt(key, "e2e-o1", "ES256", claims))


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "oidc-token":
        oidc_token(sys.argv[2])
    else:
        sys.exit("usage: cloud_metadata.py serve DIR PORTFILE | oidc-token DIR")
