#!/usr/bin/python3
"""Clients for test_engine.sh: requests whose response overlaps their body (stdlib only).

usage: duplex_client.py MODE HOST PORT VHOST [--tls CA]
  early PATH N       POST PATH with a Content-Length of N; reads the answer before sending
                     a byte of the body; then sends the body (whose first line is a request to
                     /smuggled), then "GET /ok" on the same connection. Prints the statuses in
                     order and "eof" when the connection ended.
  echo N             POST /echo-stream, chunked: sends "ping i", waits for its echo, N times.
                     Prints "echo N ok" or where it stopped.
  expect PATH N      POST PATH with Expect: 100-continue and a body of N bytes sent only after
                     an interim 100; prints the statuses seen ("no 100" after 3 s without one).
  pipeline HOSTS...  pipelined GET / for each host name, all at once; prints the statuses in
                     order.
"""
import socket
import ssl
import sys
import time


def connect(host, port, vhost, ca):
    s = socket.create_connection((host, port), timeout=10)
    if ca:
        ctx = ssl.create_default_context(cafile=ca)
        ctx.set_alpn_protocols(["http/1.1"])
        s = ctx.wrap_socket(s, server_hostname=vhost)
    return s


class Reader:
    def __init__(self, s):
        self.s = s
        self.buf = b""
        self.eof = False

    def fill(self):
        try:
            d = self.s.recv(65536)
        except (ConnectionResetError, ssl.SSLError, socket.timeout):
            d = b""
        if not d:
            self.eof = True
            return False
        self.buf += d
        return True

    def response(self):
        """Status and body of the next response (interim ones included), or None at EOF."""
        while b"\r\n\r\n" not in self.buf:
            if not self.fill():
                return None, b""
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.split(b"\r\n")
        status = int(lines[0].split(b" ")[1])
        hdrs = {}
        for ln in lines[1:]:
            k, _, v = ln.partition(b":")
            hdrs[k.strip().lower()] = v.strip()
        if status < 200:
            return status, b""
        if hdrs.get(b"transfer-encoding", b"").lower() == b"chunked":
            body = b""
            while True:
                while b"\r\n" not in self.buf:
                    if not self.fill():
                        return status, body
                ln, self.buf = self.buf.split(b"\r\n", 1)
                n = int(ln.split(b";")[0], 16)
                while len(self.buf) < n + 2:
                    if not self.fill():
                        return status, body
                body += self.buf[:n]
                self.buf = self.buf[n + 2:]
                if n == 0:
                    return status, body
        n = int(hdrs.get(b"content-length", b"0"))
        while len(self.buf) < n:
            if not self.fill():
                break
        body, self.buf = self.buf[:n], self.buf[n:]
        return status, body

    def chunk(self):
        while b"\r\n" not in self.buf:
            if not self.fill():
                return None
        ln, self.buf = self.buf.split(b"\r\n", 1)
        n = int(ln.split(b";")[0], 16)
        while len(self.buf) < n + 2:
            if not self.fill():
                return None
        d = self.buf[:n]
        self.buf = self.buf[n + 2:]
        return d


def main():
    mode, host, port, vhost = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    rest = sys.argv[5:]
    ca = None
    if "--tls" in rest:
        i = rest.index("--tls")
        ca = rest[i + 1]
        rest = rest[:i] + rest[i + 2:]
    s = connect(host, port, vhost, ca)
    r = Reader(s)
    out = []
    if mode == "early":
        path, n = rest[0], int(rest[1])
        s.sendall(b"POST %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n" %
                  (path.encode(), vhost.encode(), n))
        st, body = r.response()
        out.append("%s:%s" % (st, body.decode("latin-1")))
        smuggle = b"GET /smuggled HTTP/1.1\r\nHost: %s\r\n\r\n" % vhost.encode()
        payload = (smuggle + b"x" * n)[:n]
        try:
            s.sendall(payload)
            s.sendall(b"GET /ok HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % vhost.encode())
        except OSError:
            out.append("send-failed")
        st, body = r.response()
        if st is not None:
            out.append("%s:%s" % (st, body.decode("latin-1")))
        if r.eof or r.fill() is False:
            out.append("eof")
    elif mode == "echo":
        n = int(rest[0])
        s.sendall(b"POST /echo-stream HTTP/1.1\r\nHost: %s\r\nTransfer-Encoding: chunked\r\n"
                  b"Connection: close\r\n\r\n" % vhost.encode())
        st, _ = None, None
        got = 0
        for i in range(n):
            msg = b"ping %d" % i
            s.sendall(b"%x\r\n%s\r\n" % (len(msg), msg))
            if i == 0:
                while b"\r\n\r\n" not in r.buf:
                    if not r.fill():
                        break
                head, r.buf = r.buf.split(b"\r\n\r\n", 1) if b"\r\n\r\n" in r.buf else (r.buf, b"")
                st = head.split(b"\r\n")[0]
            d = r.chunk()
            if d != msg:
                out.append("stopped at %d: %r" % (i, d))
                break
            got += 1
        s.sendall(b"0\r\n\r\n")
        if got == n:
            out.append("echo %d ok" % n)
    elif mode == "expect":
        path, n = rest[0], int(rest[1])
        s.sendall(b"POST %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\nExpect: 100-continue\r\n"
                  b"Connection: close\r\n\r\n" % (path.encode(), vhost.encode(), n))
        s.settimeout(3)
        st, body = r.response()
        s.settimeout(10)
        if st is None:
            out.append("no 100")
        else:
            out.append("%s" % st)
        if st == 100:
            s.sendall(b"y" * n)
            st, body = r.response()
            out.append("%s:%s" % (st, body.decode("latin-1")))
        elif st is not None:
            out.append(body.decode("latin-1"))
    elif mode == "pipeline":
        req = b"".join(b"GET /ok HTTP/1.1\r\nHost: %s\r\n\r\n" % h.encode() for h in rest)
        s.sendall(req)
        for _ in rest:
            st, _ = r.response()
            out.append(str(st))
    print(" ".join(out))


main()
