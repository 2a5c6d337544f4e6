#!/usr/bin/env python3
"""A JWKS endpoint on loopback for tests, steered by files in DIR:

  DIR/port      written (atomically) once it listens: the port
  DIR/jwks.json what each GET answers, read when it answers
  DIR/hold      while it exists, a GET is held open before its answer (at most
                300 seconds), as a slow or stuck identity provider holds it
  DIR/requests  a line appended when a GET arrives
  DIR/answered  a line appended after an answer was sent

Usage: jwks_server.py DIR. Runs until killed."""
import http.server
import os
import sys
import time

HOLD_MAX_S = 300


def append(path, line):
    with open(path, "a") as f:
        f.write(line + "\n")


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        d = self.server.dir
        append(os.path.join(d, "requests"), self.path)
        until = time.monotonic() + HOLD_MAX_S
        while os.path.exists(os.path.join(d, "hold")) and time.monotonic() < until:
            time.sleep(0.02)
        with open(os.path.join(d, "jwks.json"), "rb") as f:
            body = f.read()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()
        append(os.path.join(d, "answered"), self.path)

    def log_message(self, fmt, *args):
        pass


def main():
    d = sys.argv[1]
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    srv.dir = d
    tmp = os.path.join(d, "port.tmp")
    with open(tmp, "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(tmp, os.path.join(d, "port"))
    srv.serve_forever()


if __name__ == "__main__":
    main()
