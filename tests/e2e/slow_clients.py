#!/usr/bin/env python3
"""Slow clients for the slow-connection test, loopback only.

    slow_clients.py PORT COUNT PER_ADDRESS SECONDS READY_FILE

Holds COUNT connections to 127.0.0.1:PORT for SECONDS, PER_ADDRESS of them from
each source address 127.0.1.1, 127.0.1.2, ... Each sends the start of a JoinRequest
and then one byte of an endless header a second, never finishing its headers. A
connection the server closes is opened again at once, so COUNT stay open (or being
opened) all along. READY_FILE is written once all COUNT are open.

    slow_clients.py --cap PORT COUNT

Opens COUNT connections from one address (127.0.2.1), sends nothing, and prints how
many the server closed within two seconds (its per-address cap).

The last line printed is the counts, "opened=N closed_by_server=M".
"""
import errno
import selectors
import socket
import sys
import time

HEAD = b"POST /bettercompute.join.v1.JoinService/Join HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "


def connect(port, src):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((src, 0))
    s.connect(("127.0.0.1", port))
    s.setblocking(False)
    return s


def cap(port, count):
    socks = [connect(port, "127.0.2.1") for _ in range(count)]
    time.sleep(2)
    closed = 0
    for s in socks:
        try:
            if s.recv(1) == b"":
                closed += 1
        except BlockingIOError:
            pass
        except OSError:
            closed += 1
        s.close()
    print(f"opened={count} closed_by_server={closed}")


def hold(port, count, per_address, seconds, ready_file):
    sel = selectors.DefaultSelector()
    opened = closed = 0
    addr_of = {}

    def open_one(src):
        nonlocal opened
        s = connect(port, src)
        s.send(HEAD)
        sel.register(s, selectors.EVENT_READ)
        addr_of[s] = src
        opened += 1

    def drop(s):
        nonlocal closed
        src = addr_of.pop(s)
        sel.unregister(s)
        s.close()
        closed += 1
        open_one(src)

    for i in range(count):
        open_one(f"127.0.1.{1 + i // per_address}")
    with open(ready_file, "w") as f:
        f.write("ready\n")
    end = time.monotonic() + seconds
    next_byte = time.monotonic()
    while time.monotonic() < end:
        for key, _ in sel.select(timeout=0.2):
            try:
                data = key.fileobj.recv(4096)
            except OSError:
                data = b""
            if data == b"" or data:
                # closed, or answered (the server gave up on it): open another
                drop(key.fileobj)
        if time.monotonic() >= next_byte:
            next_byte += 1.0
            for s in list(addr_of):
                try:
                    s.send(b"a")
                except OSError as e:
                    if e.errno in (errno.EAGAIN,):
                        continue
                    drop(s)
    print(f"opened={opened} closed_by_server={closed}")


if __name__ == "__main__":
    if sys.argv[1] == "--cap":
        cap(int(sys.argv[2]), int(sys.argv[3]))
    else:
        hold(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]),
             sys.argv[5])
