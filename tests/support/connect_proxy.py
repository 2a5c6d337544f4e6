#!/usr/bin/env python3
"""A small HTTP proxy on 127.0.0.1 for tests of the HTTP client's proxy support:

  CONNECT host:port   answered "200 Connection established", then bytes relayed both
                      ways (the https path); a target off loopback is refused with 403
  GET http://h:p/...  (absolute form: the http path) forwarded to h:p with the path in
                      origin form, the answer relayed until the server closes

DIR/port is written (atomically) once it listens; DIR/requests gets each request line.
Usage: connect_proxy.py DIR. Runs until killed."""
import os
import socket
import sys
import threading
import urllib.parse


def append(d, line):
    with open(os.path.join(d, "requests"), "a") as f:
        f.write(line + "\n")


def pump(a, b):
    try:
        while True:
            data = a.recv(65536)
            if not data:
                break
            b.sendall(data)
    except OSError:
        pass
    try:
        b.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def read_head(c):
    buf = b""
    while b"\r\n\r\n" not in buf:
        data = c.recv(4096)
        if not data:
            return None, b""
        buf += data
    head, rest = buf.split(b"\r\n\r\n", 1)
    return head.decode("latin-1"), rest


def split_hostport(hp):
    host, _, port = hp.rpartition(":")
    return host.strip("[]"), int(port)


def handle(c, d):
    head, rest = read_head(c)
    if head is None:
        c.close()
        return
    line = head.split("\r\n")[0]
    append(d, line)
    method, target, _ = line.split(" ", 2)
    if method == "CONNECT":
        host, port = split_hostport(target)
        if host not in ("127.0.0.1", "::1", "localhost"):
            c.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
            c.close()
            return
        up = socket.create_connection((host, port))
        c.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
    else:
        u = urllib.parse.urlsplit(target)
        up = socket.create_connection((u.hostname, u.port or 80))
        path = u.path or "/"
        if u.query:
            path += "?" + u.query
        lines = head.split("\r\n")
        up.sendall(("%s %s HTTP/1.1\r\n" % (method, path)).encode("latin-1") +
                   "\r\n".join(lines[1:]).encode("latin-1") + b"\r\n\r\n" + rest)
    t = threading.Thread(target=pump, args=(c, up), daemon=True)
    t.start()
    pump(up, c)
    t.join()
    c.close()
    up.close()


def main():
    d = sys.argv[1]
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    s.listen(16)
    tmp = os.path.join(d, "port.tmp")
    with open(tmp, "w") as f:
        f.write(str(s.getsockname()[1]))
    os.rename(tmp, os.path.join(d, "port"))
    while True:
        c, _ = s.accept()
        threading.Thread(target=handle, args=(c, d), daemon=True).start()


main()
