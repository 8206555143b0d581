#!/usr/bin/python3
"""Minimal WebSocket (RFC 6455) echo server and client, stdlib only, for tests.
  ws.py server ADDR PORT CERT KEY      TLS echo server (one text frame back per frame)
  ws.py client URL CAFILE MESSAGE      prints the echoed message or the HTTP status line"""
import base64, hashlib, os, socket, ssl, struct, sys, threading

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

def recv_frame(s):
    h = s.recv(2)
    if len(h) < 2:
        return None
    n = h[1] & 0x7F
    if n == 126:
        n = struct.unpack("!H", s.recv(2))[0]
    elif n == 127:
        n = struct.unpack("!Q", s.recv(8))[0]
    mask = s.recv(4) if h[1] & 0x80 else None
    data = b""
    while len(data) < n:
        data += s.recv(n - len(data))
    if mask:
        data = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
    return data

def frame(data, masked):
    hdr = bytes([0x81])
    n = len(data)
    mbit = 0x80 if masked else 0
    hdr += bytes([mbit | n]) if n < 126 else bytes([mbit | 126]) + struct.pack("!H", n)
    if masked:
        m = os.urandom(4)
        return hdr + m + bytes(b ^ m[i % 4] for i, b in enumerate(data))
    return hdr + data

def serve(conn):
    try:
        req = b""
        while b"\r\n\r\n" not in req:
            d = conn.recv(4096)
            if not d:
                return
            req += d
        key = [l.split(b":", 1)[1].strip() for l in req.split(b"\r\n") if l.lower().startswith(b"sec-websocket-key")][0]
        acc = base64.b64encode(hashlib.sha1(key + GUID.encode()).digest())
        conn.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " + acc + b"\r\n\r\n")
        while True:
            d = recv_frame(conn)
            if d is None:
                return
            conn.sendall(frame(b"echo: " + d, False))
    finally:
        conn.close()

if sys.argv[1] == "server":
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(sys.argv[4], sys.argv[5])
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((sys.argv[2], int(sys.argv[3])))
    ls.listen(16)
    print("ready", flush=True)
    while True:
        c, _ = ls.accept()
        try:
            c = ctx.wrap_socket(c, server_side=True)
        except Exception:
            c.close()
            continue
        threading.Thread(target=serve, args=(c,), daemon=True).start()
else:
    url, cafile, msg = sys.argv[2], sys.argv[3], sys.argv[4]
    host = url.split("//")[1].split("/")[0]
    path = "/" + url.split("//")[1].split("/", 1)[1] if "/" in url.split("//")[1] else "/"
    ctx = ssl.create_default_context(cafile=cafile)
    s = ctx.wrap_socket(socket.create_connection((host, 443), timeout=5), server_hostname=host)
    key = base64.b64encode(os.urandom(16))
    s.sendall(b"GET " + path.encode() + b" HTTP/1.1\r\nHost: " + host.encode() + b"\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: " + key + b"\r\nSec-WebSocket-Version: 13\r\n\r\n")
    resp = b""
    while b"\r\n\r\n" not in resp:
        d = s.recv(4096)
        if not d:
            break
        resp += d
    status = resp.split(b"\r\n")[0].decode()
    if " 101 " not in status:
        print(status)
        sys.exit(0)
    s.sendall(frame(msg.encode(), True))
    print(recv_frame(s).decode())
