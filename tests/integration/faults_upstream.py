#!/usr/bin/python3
"""An upstream that fails on demand, for the fault tests (stdlib only).

usage: faults_upstream.py ADDR LOG [--http PORT]... [--https PORT CERT KEY]... [--hold PORT]...
                           [--backlog-full PORT]...
  --http PORT          HTTP/1.1 with the paths below; idle keep-alive connections are closed
                       after 1 s (so pooled connections in airlock end by themselves)
  --idle SECONDS       ... or after this long instead (every port of this process)
  --https PORT C K     the same over TLS (certificate and key files)
  --hold PORT          accepts, reads and drops everything, never answers (a TLS upstream
                       whose handshake stalls, when airlock speaks TLS to it)
  --backlog-full PORT  listens with a full accept queue and never accepts: connects time out
Paths: /ok  /slow?s=N  /stall-head (never answers)  /stall-mid-head (half a status line, then
nothing)  /stall-body (head, 10 of 1000 bytes, then nothing)  /reset-head  /reset-body
/close-now (FIN without an answer)  /garbage (not HTTP)  /big-head (a 70 KiB response head)
/upload (reads a Content-Length body, answers "N bytes"; logs how far it got)  /bytes?n=N
LOG gets "open PORT PEER", "close PORT PEER", "req PORT METHOD TARGET", "upload N|aborted N"
lines: opens minus closes is what airlock still holds open toward the upstream.
"""
import socket
import ssl
import struct
import sys
import threading
import time
from urllib.parse import parse_qs, urlparse

ADDR, LOG = sys.argv[1], sys.argv[2]
_lock = threading.Lock()
IDLE = 1.0  # seconds an idle keep-alive connection is kept (--idle)


def log(line):
    with _lock, open(LOG, "a") as f:
        f.write(line + "\n")


def hold(s, seconds=60):
    """Reads and drops until the peer closes (or seconds pass)."""
    s.settimeout(seconds)
    try:
        while s.recv(65536):
            pass
    except OSError:
        pass


def reset(s):
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()


def read_head(s, buf):
    while b"\r\n\r\n" not in buf:
        s.settimeout(IDLE if buf == b"" else 30)
        try:
            d = s.recv(65536)
        except socket.timeout:
            return None, buf
        if not d:
            return None, buf
        buf += d
    head, rest = buf.split(b"\r\n\r\n", 1)
    return head, rest


def serve_http(s, port):
    buf = b""
    while True:
        head, buf = read_head(s, buf)
        if head is None:
            return  # closed, or idle 1 s: close our side
        lines = head.split(b"\r\n")
        method, target = lines[0].split(b" ")[:2]
        hdrs = {}
        for ln in lines[1:]:
            k, _, v = ln.partition(b":")
            hdrs[k.strip().lower()] = v.strip()
        log("req %d %s %s" % (port, method.decode(), target.decode()))
        u = urlparse(target.decode())
        q = parse_qs(u.query)
        p = u.path
        if p == "/stall-head":
            hold(s)
            return
        if p == "/stall-mid-head":
            s.sendall(b"HTTP/1.1 200 OK\r\nContent-")
            hold(s)
            return
        if p == "/stall-body":
            s.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n0123456789")
            hold(s)
            return
        if p == "/reset-head":
            s.sendall(b"HTTP/1.1 20")
            time.sleep(0.05)
            reset(s)
            return
        if p == "/reset-body":
            s.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n0123456789")
            time.sleep(0.05)
            reset(s)
            return
        if p == "/close-now":
            return
        if p == "/garbage":
            s.sendall(b"HELLO THERE\r\n\r\n")
            return
        if p == "/big-head":
            s.sendall(b"HTTP/1.1 200 OK\r\nX-Big: " + b"b" * 70000 + b"\r\nContent-Length: 0\r\n\r\n")
            hold(s, 5)
            return
        if p == "/bytes":
            n = int(q.get("n", ["0"])[0])
            s.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % n)
            chunk = b"x" * 65536
            while n > 0:
                k = min(n, len(chunk))
                s.sendall(chunk[:k])
                n -= k
            continue
        body = b"ok\n"
        if p == "/slow":
            time.sleep(float(q.get("s", ["1"])[0]))
        if p == "/upload":
            n = int(hdrs.get(b"content-length", b"0"))
            got = len(buf)
            buf = b""
            s.settimeout(30)
            while got < n:
                try:
                    d = s.recv(min(65536, n - got))
                except OSError:
                    d = b""
                if not d:
                    log("upload aborted %d" % got)
                    return
                got += len(d)
            log("upload %d" % got)
            body = b"%d bytes\n" % got
        close = hdrs.get(b"connection", b"").lower() == b"close"
        s.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n%s\r\n%s"
                  % (len(body), b"Connection: close\r\n" if close else b"", body))
        if close:
            return


def run(conn, peer, port, fn):
    log("open %d %s:%d" % (port, peer[0], peer[1]))
    try:
        fn(conn, port)
    except (OSError, ValueError):
        pass
    finally:
        try:
            conn.close()
        except OSError:
            pass
        log("close %d %s:%d" % (port, peer[0], peer[1]))


def listen(port, fn, backlog=128):
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((ADDR, port))
    ls.listen(backlog)
    if fn is None:
        # fill the accept queue so that later SYNs are dropped; never accept
        fillers = []
        for _ in range(16):
            c = socket.socket()
            c.settimeout(0.3)
            try:
                c.connect((ADDR, port))
                fillers.append(c)
            except OSError:
                c.close()
                break
        listen.keep = getattr(listen, "keep", []) + [ls] + fillers
        return

    def loop():
        while True:
            c, peer = ls.accept()
            threading.Thread(target=run, args=(c, peer, port, fn), daemon=True).start()
    threading.Thread(target=loop, daemon=True).start()


if __name__ == "__main__":
    open(LOG, "a").close()
    a = sys.argv[3:]
    i = 0
    while i < len(a):
        kind = a[i]
        if kind == "--idle":
            IDLE = float(a[i + 1])
            i += 2
            continue
        port = int(a[i + 1])
        i += 2
        if kind == "--http":
            listen(port, serve_http)
        elif kind == "--https":
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(a[i], a[i + 1])
            i += 2

            def tls_http(s, p, ctx=ctx):
                s.settimeout(5)
                serve_http(ctx.wrap_socket(s, server_side=True), p)
            listen(port, tls_http)
        elif kind == "--hold":
            listen(port, lambda s, p: hold(s))
        elif kind == "--backlog-full":
            listen(port, None, 0)
        else:
            sys.exit("unknown argument " + kind)
    print("ready", flush=True)
    threading.Event().wait()
