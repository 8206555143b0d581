#!/usr/bin/python3
"""Peers for test_leak.sh (Debian's python3, stdlib only).

  leak_peers.py recorder ADDR PORT DIR [CERT KEY]
      An HTTP/1.1 upstream that writes every byte each connection sent into DIR/conn-N.bin,
      reads the head and a Content-Length or chunked body (trailers included), and answers 200
      "ok <body bytes>" (1 s later for a path with "/slow" in it). With CERT and KEY it speaks TLS (http/1.1) and records the plain text.
  leak_peers.py post HOST PORT VHOST PATH PIECE...
      POSTs the pieces (hex-decoded: "hex:..." or literal text) as one Content-Length body,
      0.3 s apart, and prints "STATUS BODY" of the answer (or "closed").
  leak_peers.py chunked HOST PORT VHOST PATH BODY [TRAILER-FIELD...]
      POSTs BODY as one chunk, then 0.3 s later the last chunk with the trailer fields
      ("Name: value" lines), and prints "STATUS BODY" as post does.
  leak_peers.py h2 ADDR PORT SNI CAFILE MODE AUTHORITY PATH NAME VALUE
      One HTTP/2 request over TLS (h2_raw.py's client) carrying the field NAME: VALUE, and
      prints "STATUS BODY" (or "rst=CODE"). MODE: head (a GET with the field in its head),
      trailer (a POST: its head, a DATA frame, 0.3 s later the field as a trailer, END_STREAM),
      cl0 (the same with content-length: 0 and no DATA).
"""
import os
import socket
import ssl
import sys
import threading
import time


def chunked_done(body):
    """True when body holds a whole chunked body: chunks, the last one, trailers, empty line."""
    pos = 0
    while True:
        eol = body.find(b"\r\n", pos)
        if eol < 0:
            return False
        size = int(body[pos:eol].split(b";")[0] or b"0", 16)
        if size == 0:
            rest = body[eol + 2:]
            return rest.startswith(b"\r\n") or b"\r\n\r\n" in rest
        pos = eol + 2 + size + 2


def recorder(addr, port, d, cert=None, key=None):
    ctx = None
    if cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        ctx.set_alpn_protocols(["http/1.1"])
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((addr, port))
    srv.listen(64)
    n = [0]

    def serve(c, path):
        got = b""
        with open(path, "wb") as f:
            try:
                while b"\r\n\r\n" not in got:
                    b = c.recv(65536)
                    if not b:
                        return
                    f.write(b)
                    f.flush()
                    got += b
                head, body = got.split(b"\r\n\r\n", 1)
                length = 0
                chunked = False
                for line in head.split(b"\r\n")[1:]:
                    k, _, v = line.partition(b":")
                    if k.strip().lower() == b"content-length":
                        length = int(v.strip())
                    if k.strip().lower() == b"transfer-encoding":
                        chunked = True
                while (chunked and not chunked_done(body)) or (not chunked and len(body) < length):
                    b = c.recv(65536)
                    if not b:
                        return
                    f.write(b)
                    f.flush()
                    body += b
                if b"/slow" in head.split(b"\r\n")[0]:
                    time.sleep(1)  # the exchange is still waiting for this answer
                msg = b"ok %d" % len(body)
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s"
                          % (len(msg), msg))
            except OSError:
                pass
            finally:
                c.close()

    while True:
        c, _ = srv.accept()
        if ctx is not None:
            try:
                c = ctx.wrap_socket(c, server_side=True)
            except (OSError, ssl.SSLError):
                c.close()
                continue
        n[0] += 1
        threading.Thread(target=serve, args=(c, os.path.join(d, "conn-%d.bin" % n[0])),
                         daemon=True).start()


def post(host, port, vhost, path, pieces):
    data = [bytes.fromhex(p[4:]) if p.startswith("hex:") else p.encode() for p in pieces]
    head = b"POST %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n" % (
        path.encode(), vhost.encode(), sum(len(p) for p in data))
    send_and_answer(host, port, [head + data[0]] + data[1:])


def chunked(host, port, vhost, path, body, fields):
    head = b"POST %s HTTP/1.1\r\nHost: %s\r\nTransfer-Encoding: chunked\r\n\r\n" % (
        path.encode(), vhost.encode())
    last = b"0\r\n" + b"".join(f.encode() + b"\r\n" for f in fields) + b"\r\n"
    send_and_answer(host, port, [head + b"%x\r\n%s\r\n" % (len(body), body.encode()), last])


def send_and_answer(host, port, pieces):
    """Sends the pieces 0.3 s apart, then prints the answer's "STATUS BODY" (or "closed")."""
    s = socket.create_connection((host, port), timeout=10)
    try:
        for i, p in enumerate(pieces):
            if i > 0:
                time.sleep(0.3)
            s.sendall(p)
    except OSError:
        pass
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
    if not got:
        print("closed")
        return
    print(head.split(b" ")[1].decode(), body.decode("latin-1"))


def h2(addr, port, sni, cafile, mode, authority, path, name, value):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import h2_raw
    c = h2_raw.Conn(addr, port, sni, cafile)
    head = [(":method", "GET" if mode == "head" else "POST"), (":scheme", "https"),
            (":authority", authority), (":path", path)]
    field = [(name, value)]
    if mode == "head":
        c.request(1, head + field)
    else:
        body = None if mode == "cl0" else b"hello"
        c.request(1, head + ([("content-length", "0")] if mode == "cl0" else []), False, body)
        c.pump(lambda: False, 0.3)  # the head goes upstream before the trailers come
        c.send(h2_raw.frame(h2_raw.HEADERS, h2_raw.END_HEADERS | h2_raw.END_STREAM, 1,
                            c.block(field)))
    c.wait([1])
    st = c.stream(1)
    if st.status is None:
        print("rst=%s" % st.rst)
    else:
        print(st.status, bytes(st.body).decode("latin-1"))


if __name__ == "__main__":
    if sys.argv[1] == "recorder":
        recorder(sys.argv[2], int(sys.argv[3]), sys.argv[4], *sys.argv[5:7])
    elif sys.argv[1] == "chunked":
        chunked(sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6], sys.argv[7:])
    elif sys.argv[1] == "h2":
        h2(sys.argv[2], int(sys.argv[3]), *sys.argv[4:11])
    else:
        post(sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6:])
