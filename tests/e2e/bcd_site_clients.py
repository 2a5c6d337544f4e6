#!/usr/bin/env python3
"""Misbehaving iPXE clients for bcd site's load test, loopback only.

    bcd_site_clients.py trickle PORT SRC SECONDS COUNT OUT
        COUNT times in a row: a connection from SRC that sends a boot request one
        byte every SECONDS, never finishing its head. Each line of OUT is one
        connection: "cut after=S answered=N", S its seconds until the server closed
        it, N the bytes of any answer (0: none).

    bcd_site_clients.py flood PORT SRC COUNT
        COUNT connections from SRC opened at once, sending nothing; then it waits
        (up to 60 s each) for what each one gets: a 503 at once (the per-client cap)
        or, for those admitted, the close at the head deadline. Prints
        "opened=N refused_503=R cut=C".

    bcd_site_clients.py gone PORT SRC COUNT MAC
        COUNT connections from SRC, each sending a whole boot request for MAC and its
        FIN in the same segment (TCP_CORK), so the request is whole and its client
        gone before the server first looks. Prints "sent=N".
"""
import socket
import sys
import time


def connect(port, src):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((src, 0))
    s.connect(("127.0.0.1", port))
    return s


def request(mac):
    return ("GET /boot.ipxe?mac=%s HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            "User-Agent: iPXE/1.21.1\r\n\r\n" % mac).encode()


def trickle(port, src, every, count, out):
    body = request("52:54:00:00:0f:01")
    with open(out, "w") as f:
        for _ in range(count):
            s = connect(port, src)
            start = time.monotonic()
            answered = 0
            for b in body:
                try:
                    s.sendall(bytes([b]))
                except OSError:
                    break
                s.settimeout(every)
                try:
                    got = s.recv(4096)
                except socket.timeout:
                    continue
                except OSError:
                    break
                answered += len(got)
                if got == b"":
                    break
            f.write("cut after=%d answered=%d\n" % (time.monotonic() - start, answered))
            f.flush()
            s.close()


def flood(port, src, count):
    socks = [connect(port, src) for _ in range(count)]
    refused = cut = 0
    for s in socks:
        s.settimeout(60)
        got = b""
        try:
            while True:
                b = s.recv(4096)
                if not b:
                    break
                got += b
        except OSError:
            pass
        if got.startswith(b"HTTP/1.1 503 "):
            refused += 1
        elif got == b"":
            cut += 1
        s.close()
    print("opened=%d refused_503=%d cut=%d" % (count, refused, cut))


def gone(port, src, count, mac):
    for _ in range(count):
        s = connect(port, src)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 1)
        s.sendall(request(mac))
        s.close()  # the corked request and the FIN leave together
    print("sent=%d" % count)


def main():
    mode, port, src = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    if mode == "trickle":
        trickle(port, src, float(sys.argv[4]), int(sys.argv[5]), sys.argv[6])
    elif mode == "flood":
        flood(port, src, int(sys.argv[4]))
    elif mode == "gone":
        gone(port, src, int(sys.argv[4]), sys.argv[5])
    else:
        sys.exit("unknown mode " + mode)


if __name__ == "__main__":
    main()
