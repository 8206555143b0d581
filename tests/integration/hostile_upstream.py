#!/usr/bin/python3
"""An allowed but hostile upstream, for test_hostile.sh (stdlib only).

usage: hostile_upstream.py ADDR LOG [--http PORT]... [--https PORT CERT KEY]...
                           [--tls-flood PORT CERT KEY]...
  --http PORT           HTTP/1.1 (keep-alive) with the paths below
  --https PORT C K      the same over TLS
  --tls-flood PORT C K  TLS; after the handshake, writes 1 GiB of zeros and never reads (a
                        passthrough tunnel's far end)
Paths:
  /trailers        chunked "hello", then 0.2 s later the last chunk with a trailer field
                   (Server-Timing: db;dur=53)
  /big?n=N         N bytes of body (Content-Length), written as fast as the peer takes them
  /ws              101 Switching Protocols (WebSocket), then 1 GiB of bytes, never reading
  /interim?n=N     N interim heads "HTTP/1.1 100 Continue" in one write, then 200 "ok"
  /early?status=S  answers S (413, 401, ...) with "early" as soon as the head is read, before
                   the body; then reads the body it was sent (Content-Length or chunked) and
                   logs how much arrived; keeps the connection when the body was read whole;
                   with &close=1 it closes at once instead of reading the body
  /expect          a request with Expect: 100-continue gets "100 Continue" first; then the body
                   is read and the answer is "got N"
  /expect-reject   answers 417 at once, never reading the body (a client that waits for 100
                   never sends it)
  /echo-stream     chunked request body: answers at once with a chunked response, and echoes
                   each request chunk as a response chunk as it arrives
  /ok              200 "ok"
LOG gets "req PORT METHOD TARGET" and "body N" lines.
"""
import socket
import ssl
import sys
import threading
import time
from urllib.parse import parse_qs, urlparse

ADDR, LOG = sys.argv[1], sys.argv[2]
_lock = threading.Lock()
GIB = 1 << 30


def log(line):
    with _lock, open(LOG, "a") as f:
        f.write(line + "\n")


class Conn:
    def __init__(self, s):
        self.s = s
        self.buf = b""

    def fill(self):
        d = self.s.recv(65536)
        if not d:
            raise EOFError
        self.buf += d

    def line(self):
        while b"\r\n" not in self.buf:
            self.fill()
        ln, self.buf = self.buf.split(b"\r\n", 1)
        return ln

    def head(self):
        while b"\r\n\r\n" not in self.buf:
            self.fill()
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.split(b"\r\n")
        hdrs = {}
        for ln in lines[1:]:
            k, _, v = ln.partition(b":")
            hdrs[k.strip().lower()] = v.strip()
        return lines[0], hdrs

    def exact(self, n):
        while len(self.buf) < n:
            self.fill()
        d, self.buf = self.buf[:n], self.buf[n:]
        return d

    def body(self, hdrs):
        """Reads a request body; returns its length."""
        if hdrs.get(b"transfer-encoding", b"").lower() == b"chunked":
            total = 0
            while True:
                size = int(self.line().split(b";")[0], 16)
                if size == 0:
                    while self.line() != b"":
                        pass
                    return total
                total += len(self.exact(size))
                self.line()
        n = int(hdrs.get(b"content-length", b"0"))
        self.exact(n)
        return n


def stream(s, total, piece=1 << 20):
    z = bytes(piece)
    sent = 0
    while sent < total:
        n = min(piece, total - sent)
        s.sendall(z[:n])
        sent += n


def serve(s, port):
    c = Conn(s)
    while True:
        reqline, hdrs = c.head()
        parts = reqline.decode("latin-1").split(" ")
        target = parts[1] if len(parts) > 1 else "/"
        log("req %d %s %s" % (port, parts[0], target))
        u = urlparse(target)
        q = parse_qs(u.query)
        path = u.path
        if path == "/early":
            status = int(q.get("status", ["413"])[0])
            if q.get("close", ["0"])[0] == "1":
                s.sendall(b"HTTP/1.1 %d Early\r\nContent-Length: 5\r\nConnection: close\r\n\r\nearly" % status)
                log("early close")
                return
            s.sendall(b"HTTP/1.1 %d Early\r\nContent-Length: 5\r\n\r\nearly" % status)
            try:
                n = c.body(hdrs)
            except (EOFError, OSError):
                log("body aborted")
                return
            log("body %d" % n)
            continue
        if path == "/expect":
            if hdrs.get(b"expect", b"").lower() == b"100-continue":
                s.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
                log("sent 100")
            n = c.body(hdrs)
            body = b"got %d" % n
            s.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
            continue
        if path == "/expect-reject":
            s.sendall(b"HTTP/1.1 417 Expectation Failed\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            log("rejected %s" % hdrs.get(b"expect", b"-").decode())
            return
        if path == "/echo-stream":
            s.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            while True:
                size = int(c.line().split(b";")[0], 16)
                if size == 0:
                    while c.line() != b"":
                        pass
                    s.sendall(b"0\r\n\r\n")
                    break
                d = c.exact(size)
                c.line()
                s.sendall(b"%x\r\n%s\r\n" % (len(d), d))
            continue
        n = c.body(hdrs)
        if n:
            log("body %d" % n)
        if path == "/trailers":
            s.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
            time.sleep(0.2)
            s.sendall(b"0\r\nServer-Timing: db;dur=53\r\n\r\n")
        elif path == "/big":
            n = int(q.get("n", ["0"])[0])
            s.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % n)
            stream(s, n)
        elif path == "/ws":
            s.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                      b"Connection: Upgrade\r\nSec-WebSocket-Accept: x\r\n\r\n")
            stream(s, GIB)
            return
        elif path == "/interim":
            n = int(q.get("n", ["1"])[0])
            s.sendall(b"HTTP/1.1 100 Continue\r\n\r\n" * n +
                      b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        else:
            s.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")


def handle(s, port, ctx, flood):
    try:
        if ctx is not None:
            s = ctx.wrap_socket(s, server_side=True)
        if flood:
            stream(s, GIB)
            return
        serve(s, port)
    except (EOFError, OSError, ValueError, ssl.SSLError):
        pass
    finally:
        try:
            s.close()
        except OSError:
            pass


def listener(port, ctx, flood):
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((ADDR, port))
    ls.listen(128)
    while True:
        s, _ = ls.accept()
        threading.Thread(target=handle, args=(s, port, ctx, flood), daemon=True).start()


def main():
    args = sys.argv[3:]
    threads = []
    i = 0
    while i < len(args):
        kind = args[i]
        port = int(args[i + 1])
        ctx = None
        if kind in ("--https", "--tls-flood"):
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(args[i + 2], args[i + 3])
            i += 4
        else:
            i += 2
        t = threading.Thread(target=listener, args=(port, ctx, kind == "--tls-flood"),
                             daemon=True)
        t.start()
        threads.append(t)
    while True:
        time.sleep(3600)


main()
