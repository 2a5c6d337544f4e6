#!/usr/bin/env python3
"""A loopback proxy that measures the control plane's CPU for each request it forwards.

    cpu_proxy.py UPSTREAM_URL PORT_FILE SERVER_PID OUT_FILE

Listens on 127.0.0.1 (a free port, written to PORT_FILE) and forwards every POST to
UPSTREAM_URL (http://127.x.x.x:N), one at a time. Around each it reads the on-CPU time
of every thread of SERVER_PID (/proc/PID/task/*/schedstat, nanoseconds) and appends
"PATH STATUS CPU_NS" to OUT_FILE. With one client at a time the difference is the
server's work for that request (and its HTTP), which /proc/PID/stat's 10 ms ticks are
too coarse to show one request at a time.
"""
import glob
import http.client
import http.server
import os
import sys
import threading
import urllib.parse

upstream = urllib.parse.urlsplit(sys.argv[1])
assert upstream.scheme == "http" and upstream.hostname.startswith("127."), "loopback only"
port_file, pid, out_file = sys.argv[2], int(sys.argv[3]), sys.argv[4]
one = threading.Lock()


def cpu_ns():
    total = 0
    for f in glob.glob("/proc/%d/task/*/schedstat" % pid):
        try:
            total += int(open(f).read().split()[0])
        except (OSError, ValueError, IndexError):
            pass  # a thread that ended between the listing and the read
    return total


class Proxy(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with one:
            c = http.client.HTTPConnection(upstream.hostname, upstream.port, timeout=60)
            c.connect()
            before = cpu_ns()
            c.request("POST", self.path, body, {"Content-Type": self.headers["Content-Type"]})
            r = c.getresponse()
            answer = r.read()
            after = cpu_ns()
            c.close()
            with open(out_file, "a") as f:
                f.write("%s %d %d\n" % (self.path, r.status, after - before))
        self.send_response(r.status)
        self.send_header("Content-Type", r.getheader("Content-Type") or "application/octet-stream")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
with open(port_file + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.rename(port_file + ".tmp", port_file)
server.serve_forever()
