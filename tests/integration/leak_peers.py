#!/usr/bin/python3
"""Peers for test_leak.sh (Debian's python3, stdlib only).

  leak_peers.py recorder ADDR PORT DIR
      An HTTP/1.1 upstream that writes every byte each connection sent into DIR/conn-N.bin,
      reads the head and a Content-Length or chunked body, and answers 200 "ok <body bytes>".
  leak_peers.py post HOST PORT VHOST PATH PIECE...
      POSTs the pieces (hex-decoded: "hex:..." or literal text) as one Content-Length body,
      0.3 s apart, and prints "STATUS BODY" of the answer (or "closed").
"""
import os
import socket
import sys
import threading
import time


def recorder(addr, port, d):
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
                while (chunked and not body.endswith(b"0\r\n\r\n")) or (not chunked and len(body) < length):
                    b = c.recv(65536)
                    if not b:
                        return
                    f.write(b)
                    f.flush()
                    body += b
                msg = b"ok %d" % len(body)
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s"
                          % (len(msg), msg))
            except OSError:
                pass
            finally:
                c.close()

    while True:
        c, _ = srv.accept()
        n[0] += 1
        threading.Thread(target=serve, args=(c, os.path.join(d, "conn-%d.bin" % n[0])),
                         daemon=True).start()


def post(host, port, vhost, path, pieces):
    data = [bytes.fromhex(p[4:]) if p.startswith("hex:") else p.encode() for p in pieces]
    s = socket.create_connection((host, port), timeout=10)
    s.sendall(b"POST %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n"
              % (path.encode(), vhost.encode(), sum(len(p) for p in data)))
    try:
        for p in data:
            s.sendall(p)
            time.sleep(0.3)
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


if __name__ == "__main__":
    if sys.argv[1] == "recorder":
        recorder(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    else:
        post(sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6:])
