#!/usr/bin/python3
"""A test upstream with misbehaviours on demand (Debian's python3, stdlib only).

usage: upstream.py ADDR PORT [CONNLOG]
Paths:
  /echo-headers     200, JSON of the request line and headers it received
  /sse              text/event-stream, 3 events 0.4 s apart (chunked)
  /reset-body       Content-Length 100000, 10 bytes, then a TCP reset
  /reset-head       a half status line, then a TCP reset
  /close-early      answers 200 "early" before reading a request body, then closes
  /slow?s=N         waits N seconds, then 200
  /bytes?n=N        N bytes of 'x' with Content-Length, streamed in 64 KiB pieces
  /upload           reads the body (Content-Length or chunked), answers its length and sha256
Every accepted connection is appended to CONNLOG (one line each) when given.
"""
import hashlib
import json
import socket
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

CONNLOG = sys.argv[3] if len(sys.argv) > 3 else None
_lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _reset(self):
        self.wfile.flush()
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.connection.close()
        self.close_connection = True

    def _read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                line = self.rfile.readline()
                size = int(line.split(b";")[0], 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b""):
                        pass
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        n = int(self.headers.get("Content-Length", "0"))
        return self.rfile.read(n) if n else b""

    def _send(self, code, body, ctype="text/plain"):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _any(self):
        u = urlparse(self.path)
        q = parse_qs(u.query)
        if u.path.endswith("/echo-headers"):
            body = self._read_body()
            out = {"request_line": self.requestline,
                   "headers": [[k, v] for k, v in self.headers.items()],
                   "body_len": len(body)}
            self._send(200, json.dumps(out).encode(), "application/json")
        elif u.path == "/sse":
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for i in range(3):
                ev = f"data: event {i} at {time.time():.3f}\n\n".encode()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(ev), ev))
                self.wfile.flush()
                time.sleep(0.4)
            self.wfile.write(b"0\r\n\r\n")
        elif u.path == "/reset-body":
            self.send_response(200)
            self.send_header("Content-Length", "100000")
            self.end_headers()
            self.wfile.write(b"0123456789")
            self._reset()
        elif u.path == "/reset-head":
            self.wfile.write(b"HTTP/1.1 20")
            self._reset()
        elif u.path == "/close-early":
            self.send_response(200)
            self.send_header("Content-Length", "5")
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(b"early")
            self.close_connection = True
        elif u.path == "/slow":
            time.sleep(float(q.get("s", ["1"])[0]))
            self._send(200, b"slow\n")
        elif u.path == "/bytes":
            n = int(q.get("n", ["0"])[0])
            self.send_response(200)
            self.send_header("Content-Length", str(n))
            self.end_headers()
            chunk = b"x" * 65536
            while n > 0:
                k = min(n, len(chunk))
                self.wfile.write(chunk[:k])
                n -= k
        elif u.path == "/upload":
            body = self._read_body()
            self._send(200, f"{len(body)} {hashlib.sha256(body).hexdigest()}\n".encode())
        else:
            self._send(404, b"not found\n")

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _any


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def get_request(self):
        conn, addr = super().get_request()
        if CONNLOG:
            with _lock, open(CONNLOG, "a") as f:
                f.write(f"{addr[0]}:{addr[1]}\n")
        return conn, addr


if __name__ == "__main__":
    srv = Server((sys.argv[1], int(sys.argv[2])), Handler)
    print("ready", flush=True)
    srv.serve_forever()
