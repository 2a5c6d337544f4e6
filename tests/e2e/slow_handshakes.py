#!/usr/bin/env python3
"""Slow TLS handshakes for the slow-handshake test, loopback only.

    slow_handshakes.py PORT COUNT PER_ADDRESS SECONDS READY_FILE

Opens COUNT connections to 127.0.0.1:PORT, PER_ADDRESS of them from each source
address 127.0.3.1, 127.0.3.2, ..., then sends each one a real TLS ClientHello a byte at
a time: one byte on every connection every quarter second, for SECONDS (so that the
hello never ends within them). READY_FILE is written once all COUNT are open. A
connection the server closes is not reopened.

The last line printed is the counts, "connections=N bytes_sent=B closed_by_server=M".
"""
import socket
import ssl
import sys
import time

PERIOD = 0.25


def client_hello():
    """The bytes an OpenSSL client sends first (TLS 1.2-1.3, SNI, a key share)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(inc, out, server_hostname="localhost")
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return out.read()


def main():
    port, count, per, seconds, ready = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), \
        float(sys.argv[4]), sys.argv[5]
    hello = client_hello()
    socks = []
    for i in range(count):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind((f"127.0.3.{1 + i // per}", 0))
        s.connect(("127.0.0.1", port))
        s.setblocking(False)
        socks.append(s)
    with open(ready, "w") as f:
        f.write("ready\n")
    sent, closed, pos = 0, set(), 0
    end = time.monotonic() + seconds
    while time.monotonic() < end and pos < len(hello) - 1:
        t0 = time.monotonic()
        for i, s in enumerate(socks):
            if i in closed:
                continue
            try:
                s.send(hello[pos:pos + 1])
                sent += 1
            except OSError:
                closed.add(i)
        pos += 1
        time.sleep(max(0.0, PERIOD - (time.monotonic() - t0)))
    for i, s in enumerate(socks):
        try:
            if s.recv(1) == b"":
                closed.add(i)
        except BlockingIOError:
            pass
        except OSError:
            closed.add(i)
        s.close()
    print(f"connections={count} bytes_sent={sent} hello_bytes={len(hello)} "
          f"closed_by_server={len(closed)}")


main()
