#!/usr/bin/python3
"""A recording upstream for the bypass and fault tests (stdlib only).

usage: bypass_upstream.py ADDR LOGPREFIX [--http PORT]... [--https PORT CERT KEY]...

Every accepted connection is appended to LOGPREFIX.conns ("port peer"), every byte received to
LOGPREFIX.raw, and every request it parses to LOGPREFIX.reqs ("port METHOD TARGET host=H").
The parser is deliberately lenient, like many application servers behind a proxy: bare LF
ends a line, "Name : value" is accepted, any Transfer-Encoding containing "chunked" means
chunked, the first Content-Length wins, chunk sizes are int(size.split(';')[0], 16). So if
airlock ever forwards bytes that hide a second request inside what it believed was a body,
the hidden request shows up in .reqs.

Answers: 200 with a JSON body {"request_line", "host", "body_len"}; "Upgrade: ..." gets
101 and then every byte is echoed back (and logged); /close answers and closes.
"""
import json
import socket
import ssl
import sys
import threading

ADDR = sys.argv[1]
PREFIX = sys.argv[2]
_lock = threading.Lock()


def log(kind, data):
    with _lock, open(PREFIX + "." + kind, "ab") as f:
        f.write(data)


class Conn:
    def __init__(self, sock, port):
        self.s = sock
        self.port = port
        self.buf = b""

    def fill(self):
        d = self.s.recv(65536)
        if d:
            log("raw", d)
        self.buf += d
        return d

    def line(self):
        while b"\n" not in self.buf:
            if not self.fill():
                raise EOFError
        ln, self.buf = self.buf.split(b"\n", 1)
        return ln.rstrip(b"\r")

    def take(self, n):
        while len(self.buf) < n:
            if not self.fill():
                raise EOFError
        d, self.buf = self.buf[:n], self.buf[n:]
        return d

    def serve(self):
        while True:
            rl = self.line()
            while rl == b"":
                rl = self.line()
            headers = []
            while True:
                ln = self.line()
                if ln == b"":
                    break
                if b":" in ln:
                    k, v = ln.split(b":", 1)
                    headers.append((k.strip().lower(), v.strip()))

            def get(name):
                for k, v in headers:
                    if k == name:
                        return v
                return None
            parts = rl.split(b" ")
            method = parts[0]
            target = parts[1] if len(parts) > 1 else b"?"
            host = get(b"host") or b""
            log("reqs", b"%d %s %s host=%s\n" % (self.port, method, target, host))
            body = 0
            te = get(b"transfer-encoding") or b""
            if b"chunked" in te.lower():
                while True:
                    size = int(self.line().split(b";")[0].strip() or b"0", 16)
                    if size == 0:
                        while self.line() != b"":
                            pass
                        break
                    body += len(self.take(size))
                    self.line()
            elif get(b"content-length") is not None:
                body = len(self.take(int(get(b"content-length"))))
            if get(b"upgrade") is not None:
                self.s.sendall(b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n"
                               b"Upgrade: " + get(b"upgrade") + b"\r\n\r\n")
                if self.buf:
                    self.s.sendall(self.buf)
                while True:
                    d = self.s.recv(65536)
                    if not d:
                        return
                    log("raw", d)
                    self.s.sendall(d)
            out = json.dumps({"request_line": rl.decode("latin-1"),
                              "host": host.decode("latin-1"), "body_len": body}).encode()
            close = target.startswith(b"/close") or (get(b"connection") or b"").lower() == b"close"
            self.s.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                           b"Content-Length: %d\r\n%s\r\n%s"
                           % (len(out), b"Connection: close\r\n" if close else b"", out))
            if close:
                return


def handle(sock, port):
    try:
        Conn(sock, port).serve()
    except (EOFError, OSError, ValueError, ssl.SSLError):
        pass
    finally:
        try:
            sock.close()
        except OSError:
            pass


def listen(port, ctx):
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((ADDR, port))
    ls.listen(128)

    def loop():
        while True:
            c, peer = ls.accept()
            log("conns", b"%d %s:%d\n" % (port, peer[0].encode(), peer[1]))

            def run(c=c):
                if ctx is not None:
                    try:
                        c.settimeout(5)
                        c = ctx.wrap_socket(c, server_side=True)
                        c.settimeout(None)
                    except (OSError, ssl.SSLError):
                        c.close()
                        return
                handle(c, port)
            threading.Thread(target=run, daemon=True).start()
    threading.Thread(target=loop, daemon=True).start()


if __name__ == "__main__":
    for k in ("conns", "raw", "reqs"):
        open(PREFIX + "." + k, "ab").close()
    a = sys.argv[3:]
    i = 0
    while i < len(a):
        if a[i] == "--http":
            listen(int(a[i + 1]), None)
            i += 2
        elif a[i] == "--https":
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(a[i + 2], a[i + 3])
            listen(int(a[i + 1]), ctx)
            i += 4
        else:
            sys.exit("unknown argument " + a[i])
    print("ready", flush=True)
    threading.Event().wait()
