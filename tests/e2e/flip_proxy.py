#!/usr/bin/env python3
"""A test proxy between bcd and the control plane, loopback only.

    flip_proxy.py UPSTREAM_URL PORT_FILE MODE_FILE

Listens on 127.0.0.1 (a free port, written to PORT_FILE) and forwards every POST
to UPSTREAM_URL (http://127.x.x.x:N). MODE_FILE holds the mode, read on each request:
  pass    forward as is
  flip    flip one bit in the middle of a 200 answer (inside the signed body)
  record  forward, and keep the 200 answer's body
  replay  answer with the body kept by record, without asking upstream
  shed    answer 503 unavailable with Retry-After: 2, as an overloaded control plane
          sheds, without asking upstream
Each request's arrival (monotonic seconds), path and mode go to PORT_FILE.log.
"""
import http.client
import http.server
import os
import sys
import time
import urllib.parse

upstream = urllib.parse.urlsplit(sys.argv[1])
assert upstream.scheme == "http" and upstream.hostname.startswith("127."), "loopback only"
port_file, mode_file = sys.argv[2], sys.argv[3]
kept = {}


class Proxy(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        mode = open(mode_file).read().strip()
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with open(port_file + ".log", "a") as log:
            log.write("%.3f %s %s\n" % (time.monotonic(), self.path, mode))
        if mode == "shed":
            answer = (b'{"code":"unavailable","message":"the control plane is overloaded; '
                      b'retry after the seconds Retry-After says"}')
            self.send_response(503)
            self.send_header("Content-Type", "application/json")
            self.send_header("Retry-After", "2")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)
            return
        if mode == "replay" and self.path in kept:
            status, ctype, answer = 200, "application/proto", kept[self.path]
        else:
            c = http.client.HTTPConnection(upstream.hostname, upstream.port, timeout=30)
            c.request("POST", self.path, body, {"Content-Type": self.headers["Content-Type"]})
            r = c.getresponse()
            status, ctype, answer = r.status, r.getheader("Content-Type"), r.read()
            c.close()
            if status == 200 and mode == "flip":
                i = len(answer) // 2
                answer = answer[:i] + bytes([answer[i] ^ 0x01]) + answer[i + 1:]
            if status == 200 and mode == "record":
                kept[self.path] = answer
        self.send_response(status)
        self.send_header("Content-Type", ctype or "application/octet-stream")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
with open(port_file + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.rename(port_file + ".tmp", port_file)
server.serve_forever()
