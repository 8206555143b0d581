#!/usr/bin/python3
"""Peers for test_budget.sh (Debian's python3, stdlib only).

  budget_peers.py server ADDR PORT DIR
      An HTTP/1.1 upstream. Each request's body (Content-Length or chunked, framing removed) is
      written to DIR/body-N as it arrives (DIR/NAME for a target ending in ?rec=NAME), so a
      body cut short shows how much of it came.
      GET /big?n=N answers N bytes; anything else "ok <body bytes>". Keep-alive.
  budget_peers.py upload HOST PORT VHOST PATH TOTAL [FILE]
      POSTs TOTAL bytes as a chunked body in 16 KiB chunks while reading the answer, and prints
      "STATUS BODY" (or "closed") and, on a second line, "sent N" (bytes of body it got out).
      With FILE (the server's record of this body), waits after the first 64 KiB until FILE
      holds a byte, so that the upstream is known to be receiving before the rest goes.
"""
import os
import socket
import sys
import threading
import time


def read_line(c, buf):
    while b"\r\n" not in buf:
        b = c.recv(65536)
        if not b:
            raise EOFError
        buf += b
    line, _, rest = buf.partition(b"\r\n")
    return line, rest


def read_body(c, buf, head, f):
    """Reads one body, writing its bytes to f as they come; returns (length, leftover)."""
    length = 0
    chunked = False
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            length = int(v.strip())
        if k.strip().lower() == b"transfer-encoding":
            chunked = True
    got = 0
    if not chunked:
        while got < length:
            if not buf:
                buf = c.recv(65536)
                if not buf:
                    raise EOFError
            take = buf[: length - got]
            f.write(take)
            f.flush()
            got += len(take)
            buf = buf[len(take):]
        return got, buf
    while True:
        line, buf = read_line(c, buf)
        size = int(line.split(b";")[0], 16)
        if size == 0:
            _, buf = read_line(c, buf)
            return got, buf
        left = size
        while left > 0:
            if not buf:
                buf = c.recv(65536)
                if not buf:
                    raise EOFError
            take = buf[:left]
            f.write(take)
            f.flush()
            got += len(take)
            left -= len(take)
            buf = buf[len(take):]
        _, buf = read_line(c, buf)


def server(addr, port, d):
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((addr, port))
    srv.listen(64)
    n = [0]
    lock = threading.Lock()

    def serve(c):
        buf = b""
        try:
            while True:
                while b"\r\n\r\n" not in buf:
                    b = c.recv(65536)
                    if not b:
                        return
                    buf += b
                head, _, buf = buf.partition(b"\r\n\r\n")
                target = head.split(b" ")[1]
                with lock:
                    n[0] += 1
                    name = "body-%d" % n[0]
                if b"?rec=" in target:
                    name = target.split(b"?rec=")[1].decode()
                with open(os.path.join(d, name), "wb") as f:
                    got, buf = read_body(c, buf, head, f)
                if target.startswith(b"/big?n="):
                    size = int(target[7:])
                    c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % size)
                    block = b"x" * 65536
                    while size > 0:
                        c.sendall(block[:size])
                        size -= min(size, len(block))
                    continue
                msg = b"ok %d" % got
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(msg), msg))
        except (OSError, EOFError, ValueError):
            pass
        finally:
            c.close()

    while True:
        c, _ = srv.accept()
        threading.Thread(target=serve, args=(c,), daemon=True).start()


def upload(host, port, vhost, path, total, wait_file):
    s = socket.create_connection((host, port), timeout=20)
    s.sendall(b"POST %s HTTP/1.1\r\nHost: %s\r\nTransfer-Encoding: chunked\r\n\r\n"
              % (path.encode(), vhost.encode()))
    sent = [0]

    def send():
        piece = b"u" * 16384
        try:
            while sent[0] < total:
                p = piece[: total - sent[0]]
                s.sendall(b"%x\r\n%s\r\n" % (len(p), p))
                sent[0] += len(p)
                if wait_file and sent[0] == 4 * len(piece):
                    end = time.time() + 20
                    while time.time() < end and not (os.path.exists(wait_file)
                                                     and os.path.getsize(wait_file) > 0):
                        time.sleep(0.02)
            s.sendall(b"0\r\n\r\n")
        except OSError:
            pass

    t = threading.Thread(target=send, daemon=True)
    t.start()
    got = b""
    try:
        while b"\r\n\r\n" not in got:
            b = s.recv(65536)
            if not b:
                break
            got += b
        head, _, body = got.partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n")[1:]:
            k, _, v = line.partition(b":")
            if k.strip().lower() == b"content-length":
                length = int(v.strip())
        while len(body) < length:
            b = s.recv(65536)
            if not b:
                break
            body += b
    except OSError:
        pass
    s.close()
    t.join(5)
    if not got:
        print("closed")
    else:
        print(head.split(b" ")[1].decode(), body.decode("latin-1"))
    print("sent %d" % sent[0])


if __name__ == "__main__":
    if sys.argv[1] == "server":
        server(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    else:
        upload(sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], int(sys.argv[6]),
               sys.argv[7] if len(sys.argv) > 7 else None)
