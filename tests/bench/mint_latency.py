#!/usr/bin/env python3
"""TLS handshake time to a proxy for never-seen names vs the same names again, in one process.

usage: mint_latency.py HOST PORT CAFILE NAME...

For every NAME: TCP connect to HOST:PORT (not timed), then time the TLS handshake with
SNI = NAME (verifying against CAFILE, so a wrong certificate fails), then one keep-alive
GET /1k.bin and its answer (timed separately), then close (like curl). First all names once (airlock mints a
leaf for each), then all names again (cache hit). Prints one line per handshake:
"first|second NAME HANDSHAKE_MS REQUEST_MS STATUS". Without process start-up, DNS and CA
loading in the timed part, this is far less noisy than curl's time_appconnect.
"""
import socket
import ssl
import sys
import time


def one(host, port, ctx, name):
    s = socket.create_connection((host, port), timeout=10)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    t0 = time.perf_counter()
    tls = ctx.wrap_socket(s, server_hostname=name, do_handshake_on_connect=False)
    tls.do_handshake()
    t1 = time.perf_counter()
    tls.sendall(("GET /1k.bin HTTP/1.1\r\nHost: %s\r\n\r\n" % name).encode())
    data = b""
    while b"\r\n\r\n" not in data:
        d = tls.recv(65536)
        if not d:
            break
        data += d
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            length = int(v)
    while len(body) < length:
        d = tls.recv(65536)
        if not d:
            break
        body += d
    t2 = time.perf_counter()
    tls.close()
    status = data.split(b" ", 2)[1].decode() if data.startswith(b"HTTP/") else "none"
    return (t1 - t0) * 1e3, (t2 - t1) * 1e3, status


def main():
    host, port, cafile, names = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
    ctx = ssl.create_default_context(cafile=cafile)
    for which in ("first", "second"):
        for n in names:
            try:
                hs, req, status = one(host, port, ctx, n)
                print(which, n, "%.3f" % hs, "%.3f" % req, status, flush=True)
            except (OSError, ssl.SSLError) as e:
                print(which, n, "nan", "nan", "error:%s" % type(e).__name__, flush=True)


if __name__ == "__main__":
    main()
