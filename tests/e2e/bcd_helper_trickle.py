"""bcd_helper_socket_test.sh's trickle case, run as the helper's user: a client that
sends a frame's header and then a byte at a time must not hold bcd helper. Prints
counts; the shell decides. Argument: the socket's path."""
import socket
import struct
import sys
import time


def exact(s, n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            raise EOFError("closed after %d of %d bytes" % (len(b), n))
        b += c
    return b


def frame(s):
    (n,) = struct.unpack(">I", exact(s, 4))
    return exact(s, n)


def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(60)
    s.connect(path)
    return s


def main():
    path = sys.argv[1]
    trickler = connect(path)
    trickler.sendall(struct.pack(">I", 100) + b"\x06")
    sent = 1
    # a second client while the trickler holds its session
    other = connect(path)
    req = b"\x06tpm.ak"
    other.sendall(struct.pack(">I", len(req)) + req)
    ans = frame(other)
    print("second_status=%d" % ans[0])
    print("second_line=%s" % ans[1:].decode("ascii", "replace"))
    # idle sessions up to the limit, then one more
    idle = [connect(path) for _ in range(7)]
    extra = connect(path)
    busy = frame(extra)
    print("busy_line=%s" % busy[1:].decode("ascii", "replace"))
    for s in idle + [extra, other]:
        s.close()
    # the trickler goes on, a byte every half second, until the helper cuts it off
    after = 0
    while sent < 100:
        try:
            trickler.send(b"x")
        except (BrokenPipeError, ConnectionResetError):
            break
        sent += 1
        after += 1
        time.sleep(0.5)
    print("trickled_after_answer=%d" % after)
    print("trickled=%d" % sent)
    cut = frame(trickler)
    print("cut_line=%s" % cut[1:].decode("ascii", "replace"))


main()
