#!/usr/bin/python3
"""Peers for test_tunguard.sh (Debian's python3, stdlib only): WebSockets and passthrough
tunnels through airlock, with upstreams that record what reached them.

  ws_peers.py server ADDR PORT DIR
      A plain-HTTP WebSocket upstream. Connection N writes its request head to DIR/wsN.head,
      every raw byte after the 101 to DIR/wsN.bin and every payload byte, unmasked, as it
      arrives, to DIR/wsN.pl. Path /echo: each message comes back as a text message, each ping
      as a pong; /down?n=N: sends N bytes in binary frames of 16 KiB; anything else: reads.
  ws_peers.py raw ADDR PORT DIR [SEND]
      A TCP upstream for passthrough tunnels: connection N's bytes go to DIR/rawN.bin; with
      SEND, it sends that many bytes once the first ones came.
  ws_peers.py client HOST PORT VHOST PATH ACTION [ARGS...]
      Opens a WebSocket (offering permessage-deflate) and then:
        echo             a text message, a message in two fragments with a ping between them,
                         a ping and an empty message; prints what comes back, one line each
        upload TOTAL [AFTER FILE]
                         sends TOTAL bytes in binary frames of 16 KiB, printing "sent N"; with
                         AFTER, prints "paused" after that many and waits until FILE exists
        download         reads until closed; prints "got N" (raw bytes after the 101)
        send SPEC...     sends frames, then prints each message that comes back ("echo X")
                         ("close CODE REASON" for a close frame) and "closed" when the
                         connection closes. SPEC: text:S, ping:S,
                         rsv:S (RSV1 set), frag:A|B (two fragments 0.3 s apart), split:S:K
                         (one frame written in two pieces 0.3 s apart, cut at raw byte K)
  ws_peers.py tunnel PROXYHOST PROXYPORT HOST up TOTAL | down
      CONNECT HOST:443, a real TLS ClientHello naming HOST, then (up) TOTAL more bytes in
      16 KiB pieces, printing "sent N", or (down) reads until closed, printing "got N".
"""
import base64
import os
import socket
import ssl
import struct
import sys
import threading
import time

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def frame(op, data, masked=True, fin=True, rsv=0):
    hdr = bytes([(0x80 if fin else 0) | rsv | op])
    n = len(data)
    m = 0x80 if masked else 0
    if n < 126:
        hdr += bytes([m | n])
    elif n < 65536:
        hdr += bytes([m | 126]) + struct.pack("!H", n)
    else:
        hdr += bytes([m | 127]) + struct.pack("!Q", n)
    if not masked:
        return hdr + data
    key = os.urandom(4)
    return hdr + key + bytes(b ^ key[i % 4] for i, b in enumerate(data))


class Reader:
    """Frames from a socket; tee(raw) and pl(payload) see the bytes as they come."""

    def __init__(self, s, tee=None, pl=None):
        self.s, self.buf, self.tee, self.pl = s, b"", tee, pl

    def need(self, n):
        while len(self.buf) < n:
            d = self.s.recv(65536)
            if not d:
                raise EOFError
            if self.tee:
                self.tee(d)
            self.buf += d

    def take(self, n):
        self.need(n)
        d, self.buf = self.buf[:n], self.buf[n:]
        return d

    def frame(self):
        h = self.take(2)
        n = h[1] & 0x7F
        if n == 126:
            n = struct.unpack("!H", self.take(2))[0]
        elif n == 127:
            n = struct.unpack("!Q", self.take(8))[0]
        key = self.take(4) if h[1] & 0x80 else None
        data = b""
        while len(data) < n:
            if not self.buf:
                self.need(1)
            piece = self.buf[: n - len(data)]
            self.buf = self.buf[len(piece):]
            if key:
                off = len(data)
                piece = bytes(b ^ key[(off + i) % 4] for i, b in enumerate(piece))
            if self.pl:
                self.pl(piece)
            data += piece
        return h[0] & 0x80, h[0] & 0x0F, data


def read_head(s):
    got = b""
    while b"\r\n\r\n" not in got:
        d = s.recv(4096)
        if not d:
            raise EOFError
        got += d
    head, _, rest = got.partition(b"\r\n\r\n")
    return head, rest


def serve(c, d, n):
    try:
        head, rest = read_head(c)
        with open(os.path.join(d, "ws%d.head" % n), "wb") as f:
            f.write(head)
        key = [l.split(b":", 1)[1].strip() for l in head.split(b"\r\n")
               if l.lower().startswith(b"sec-websocket-key")][0]
        import hashlib
        acc = base64.b64encode(hashlib.sha1(key + GUID).digest())
        c.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                  b"Connection: Upgrade\r\nSec-WebSocket-Accept: " + acc + b"\r\n\r\n")
        path = head.split(b" ")[1].decode()
        binf = open(os.path.join(d, "ws%d.bin" % n), "wb", buffering=0)
        plf = open(os.path.join(d, "ws%d.pl" % n), "wb", buffering=0)
        binf.write(rest)
        r = Reader(c, binf.write, plf.write)
        r.buf = rest
        if path.startswith("/down"):
            left = int(path.split("n=")[1])
            while left > 0:
                k = min(left, 16384)
                c.sendall(frame(2, b"d" * k, masked=False))
                left -= k
        msg = b""
        while True:
            fin, op, data = r.frame()
            if not path.startswith("/echo"):
                continue
            if op == 9:
                c.sendall(frame(10, data, masked=False))
            elif op == 8:
                c.sendall(frame(8, data, masked=False))
                return
            elif op in (0, 1, 2):
                msg += data
                if fin:
                    c.sendall(frame(1, msg, masked=False))
                    msg = b""
    except (EOFError, OSError, IndexError):
        pass
    finally:
        c.close()


def listen(addr, port):
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((addr, port))
    ls.listen(64)
    return ls


def server(addr, port, d):
    ls = listen(addr, port)
    n = 0
    while True:
        c, _ = ls.accept()
        n += 1
        threading.Thread(target=serve, args=(c, d, n), daemon=True).start()


def raw_serve(c, path, send):
    with open(path, "wb", buffering=0) as f:
        try:
            first = True
            while True:
                d = c.recv(65536)
                if not d:
                    break
                f.write(d)
                if first and send:
                    first = False
                    c.sendall(b"r" * send)
        except OSError:
            pass
    c.close()


def raw(addr, port, d, send):
    ls = listen(addr, port)
    n = 0
    while True:
        c, _ = ls.accept()
        n += 1
        threading.Thread(target=raw_serve, args=(c, os.path.join(d, "raw%d.bin" % n), send),
                         daemon=True).start()


def ws_open(host, port, vhost, path):
    s = socket.create_connection((host, port), timeout=10)
    key = base64.b64encode(os.urandom(16))
    s.sendall(b"GET " + path.encode() + b" HTTP/1.1\r\nHost: " + vhost.encode() +
              b"\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: " + key +
              b"\r\nSec-WebSocket-Version: 13\r\n"
              b"Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n\r\n")
    head, rest = read_head(s)
    status = head.split(b"\r\n")[0].decode()
    if " 101 " not in status:
        print(status)
        sys.exit(0)
    return s, rest


def drain(s, got):
    """Reads s to its end (or an error): got plus the bytes read."""
    try:
        while True:
            d = s.recv(65536)
            if not d:
                break
            got += len(d)
    except OSError:
        pass
    return got


def replies(r, timeout):
    r.s.settimeout(timeout)
    first, msg = 0, b""  # a message may come in fragments (airlock's scrubber may cut it)
    try:
        while True:
            fin, op, data = r.frame()
            if op in (0, 1, 2):
                first, msg = (first, msg + data) if op == 0 else (op, data)
                if not fin:
                    continue
                op, data = first, msg
            name = {1: "echo", 2: "binary", 8: "close", 9: "ping", 10: "pong"}.get(op, "op%d" % op)
            if op == 8:
                code = struct.unpack("!H", data[:2])[0] if len(data) >= 2 else 0
                print(name, code, data[2:].decode("latin-1"))
                return
            print(name, data.decode("latin-1"))
    except socket.timeout:
        return
    except (EOFError, OSError):
        print("closed")


def client(host, port, vhost, path, action, args):
    s, rest = ws_open(host, port, vhost, path)
    r = Reader(s)
    r.buf = rest
    if action == "echo":
        s.sendall(frame(1, b"hello"))
        s.sendall(frame(1, b"frag-", fin=False))
        s.sendall(frame(9, b"p1"))
        s.sendall(frame(0, b"ment"))
        s.sendall(frame(9, b""))
        s.sendall(frame(1, b""))
        s.sendall(frame(2, b"x" * 70000))  # a 64-bit length
        s.sendall(frame(8, struct.pack("!H", 1000)))
        replies(r, 5)
    elif action == "upload":
        total, sent = int(args[0]), 0
        pause = int(args[1]) if len(args) > 2 else -1
        try:
            while sent < total:
                if sent >= pause >= 0:
                    print("paused", flush=True)
                    while not os.path.exists(args[2]):
                        time.sleep(0.05)
                    pause = -1
                s.sendall(frame(2, b"u" * 16384))
                sent += 16384
        except OSError:
            pass
        print("sent", sent)
        replies(r, 1)
    elif action == "download":
        print("got", drain(s, len(rest)))
    else:
        try:
            for spec in args:
                kind, _, v = spec.partition(":")
                if kind == "text":
                    s.sendall(frame(1, v.encode()))
                elif kind == "ping":
                    s.sendall(frame(9, v.encode()))
                elif kind == "rsv":
                    s.sendall(frame(1, v.encode(), rsv=0x40))
                elif kind == "frag":
                    a, b = v.split("|")
                    s.sendall(frame(1, a.encode(), fin=False))
                    time.sleep(0.3)
                    s.sendall(frame(0, b.encode()))
                elif kind == "split":
                    text, k = v.rsplit(":", 1)
                    f = frame(1, text.encode())
                    s.sendall(f[: int(k)])
                    time.sleep(0.3)
                    s.sendall(f[int(k):])
        except OSError:
            pass
        replies(r, 2)


def tunnel(phost, pport, host, mode, args):
    s = socket.create_connection((phost, pport), timeout=10)
    s.sendall(b"CONNECT %s:443 HTTP/1.1\r\nHost: %s:443\r\n\r\n" % (host.encode(), host.encode()))
    head, rest = read_head(s)
    if b" 200 " not in head.split(b"\r\n")[0]:
        print(head.split(b"\r\n")[0].decode())
        return
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    o = ctx.wrap_bio(inc, out, server_hostname=host)
    try:
        o.do_handshake()
    except ssl.SSLWantReadError:
        pass
    hello = out.read()
    s.sendall(hello)
    time.sleep(0.3)  # a TLS client waits for the ServerHello: airlock reads the hello alone
    if mode == "up":
        total, sent = int(args[0]), len(hello)
        try:
            while sent < total:
                s.sendall(b"t" * 16384)
                sent += 16384
        except OSError:
            pass
        print("sent", sent)
        return
    print("got", drain(s, len(rest)))


if __name__ == "__main__":
    a = sys.argv
    if a[1] == "server":
        server(a[2], int(a[3]), a[4])
    elif a[1] == "raw":
        raw(a[2], int(a[3]), a[4], int(a[5]) if len(a) > 5 else 0)
    elif a[1] == "client":
        client(a[2], int(a[3]), a[4], a[5], a[6], a[7:])
    else:
        tunnel(a[2], int(a[3]), a[4], a[5], a[6:])
