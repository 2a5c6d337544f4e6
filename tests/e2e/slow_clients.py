#!/usr/bin/env python3
"""Slow clients for the slow-connection test, loopback only.

    slow_clients.py PORT COUNT SECONDS READY_FILE

Holds COUNT connections to 127.0.0.1:PORT for SECONDS, all from 127.0.0.1 (one
address, as from behind a NAT). Each sends the start of a JoinRequest and then one
byte of an endless header a second, never finishing its headers. A connection the
server closes is opened again half a second later, so COUNT stay open (or being
opened) all along, far more than the server lets one address hold: the server closes
one of them for each that it takes. Connects do not block (the ones the server has
not taken wait in its listen queue). READY_FILE is written once all COUNT are
started; the clients stop after SECONDS or as soon as READY_FILE.stop exists.

    slow_clients.py --cap PORT COUNT

Opens COUNT connections from one address (127.0.2.1), sends nothing, and prints how
many the server closed within two seconds (its per-address cap).

The last line printed is the counts, "opened=N closed_by_server=M".
"""
import errno
import os
import selectors
import socket
import sys
import time

HEAD = b"POST /bettercompute.join.v1.JoinService/Join HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "
REOPEN_S = 0.5


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


def hold(port, count, seconds, ready_file):
    sel = selectors.DefaultSelector()
    opened = closed = 0
    live = {}  # socket -> 1 once its head was sent
    reopen = []  # times at which to open one again

    def open_one():
        nonlocal opened
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        rc = s.connect_ex(("127.0.0.1", port))
        if rc not in (0, errno.EINPROGRESS):
            s.close()
            reopen.append(time.monotonic() + REOPEN_S)
            return
        sel.register(s, selectors.EVENT_WRITE)
        live[s] = 0
        opened += 1

    def drop(s):
        nonlocal closed
        del live[s]
        sel.unregister(s)
        s.close()
        closed += 1
        reopen.append(time.monotonic() + REOPEN_S)

    for _ in range(count):
        open_one()
    with open(ready_file, "w") as f:
        f.write("ready\n")
    end = time.monotonic() + seconds
    next_byte = time.monotonic() + 1.0
    stop_file = ready_file + ".stop"
    while time.monotonic() < end and not os.path.exists(stop_file):
        for key, ev in sel.select(timeout=0.1):
            s = key.fileobj
            if s not in live:
                continue
            if live[s] == 0 and ev & selectors.EVENT_WRITE:
                # connected (or failed): send the head, then wait for the server's close
                try:
                    s.send(HEAD)
                except OSError:
                    drop(s)
                    continue
                live[s] = 1
                sel.modify(s, selectors.EVENT_READ)
                continue
            try:
                s.recv(4096)
            except BlockingIOError:
                continue
            except OSError:
                pass
            # closed, or answered (the server gave up on it): open another later
            drop(s)
        now = time.monotonic()
        due = [t for t in reopen if t <= now]
        reopen[:] = [t for t in reopen if t > now]
        for _ in due:
            open_one()
        if now >= next_byte:
            next_byte += 1.0
            for s in [s for s, sent in live.items() if sent]:
                try:
                    s.send(b"a")
                except OSError as e:
                    if e.errno != errno.EAGAIN:
                        drop(s)
    print(f"opened={opened} closed_by_server={closed}")


if __name__ == "__main__":
    if sys.argv[1] == "--cap":
        cap(int(sys.argv[2]), int(sys.argv[3]))
    else:
        hold(int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4])
