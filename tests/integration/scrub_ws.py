#!/usr/bin/python3
"""Peers for test_scrub_ws.sh (Debian's python3, stdlib only).

  scrub_ws.py server ADDR PORT DIR [CERT KEY]
      A plain-HTTP WebSocket upstream that hands back the real value airlock put in the
      upgrade request's Authorization header. Connection N writes its request head to
      DIR/wsN.head. Path /frames sends, then closes (1000):
        1  text      "auth=TOKEN"                       one frame
        2  text      "frag=TOKEN!" in three fragments, the value cut inside the first two,
                     each fragment written in two pieces 0.2 s apart (cut inside the value),
                     a ping carrying TOKEN between the second and the third
        3  binary    200 x "b", base64(TOKEN), 100 x "b"  (a 16-bit length)
        4  binary    70000 bytes, TOKEN at every 9973rd byte  (a 64-bit length)
        5  text      "clean"
      and a close frame 1000 "bye TOKEN". Path /rsv: a text frame with RSV1 set (as a
      permessage-deflate frame would be), carrying TOKEN, then "after". With CERT and KEY:
      TLS (an upstream behind an HTTP/2 WebSocket).
  scrub_ws.py expect REAL SURROGATE
      The two "binary" lines the client should print for messages 3 and 4, scrubbed.
  scrub_ws.py client HOST PORT VHOST PATH AUTH RAWFILE
      Opens a WebSocket (offering permessage-deflate, Authorization: AUTH), writes every raw
      byte after the 101 to RAWFILE and prints each message or control frame, one line each:
      "text S", "binary LEN sha256", "ping S", "close CODE REASON", then "closed".
  scrub_ws.py h2client HOST PATH CAFILE AUTH RAWFILE
      The same over HTTP/2 (RFC 8441 extended CONNECT, python3-h2) to HOST:443.
"""
import base64
import hashlib
import os
import socket
import struct
import sys
import threading
import time

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def frame(op, data, fin=True, rsv=0, masked=False):
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


def read_head(s):
    got = b""
    while b"\r\n\r\n" not in got:
        d = s.recv(4096)
        if not d:
            raise EOFError
        got += d
    head, _, rest = got.partition(b"\r\n\r\n")
    return head, rest


def big(tok):
    b = bytearray((48 + i % 10) for i in range(70000))
    for at in range(0, 70000 - len(tok), 9973):
        b[at:at + len(tok)] = tok
    return bytes(b)


def serve(c, d, n):
    try:
        head, _ = read_head(c)
        with open(os.path.join(d, "ws%d.head" % n), "wb") as f:
            f.write(head)
        lines = head.split(b"\r\n")
        path = lines[0].split(b" ")[1]
        hdr = {l.split(b":", 1)[0].strip().lower(): l.split(b":", 1)[1].strip()
               for l in lines[1:] if b":" in l}
        tok = hdr.get(b"authorization", b"").split(b" ")[-1]
        acc = base64.b64encode(hashlib.sha1(hdr[b"sec-websocket-key"] + GUID).digest())
        c.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                  b"Connection: Upgrade\r\nSec-WebSocket-Accept: " + acc + b"\r\n\r\n")
        if path == b"/rsv":
            c.sendall(frame(1, b"deflated? " + tok, rsv=0x40))
            c.sendall(frame(1, b"after"))
        else:
            c.sendall(frame(1, b"auth=" + tok))
            msg = b"frag=" + tok + b"!"
            cut1, cut2 = 5 + len(tok) // 3, 5 + 2 * len(tok) // 3
            parts = [frame(1, msg[:cut1], fin=False), frame(0, msg[cut1:cut2], fin=False),
                     frame(9, tok), frame(0, msg[cut2:])]
            for i, p in enumerate(parts):
                if i == 2:
                    c.sendall(p)
                    continue
                k = len(p) - 3  # inside the value's piece
                c.sendall(p[:k])
                time.sleep(0.2)
                c.sendall(p[k:])
            c.sendall(frame(2, b"b" * 200 + base64.b64encode(tok) + b"b" * 100))
            c.sendall(frame(2, big(tok)))
            c.sendall(frame(1, b"clean"))
        c.sendall(frame(8, struct.pack("!H", 1000) + b"bye " + tok))
        time.sleep(1)
    except (OSError, EOFError, KeyError, IndexError):
        pass
    finally:
        c.close()


def server(addr, port, d, cert=None, key=None):
    ctx = None
    if cert:
        import ssl
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((addr, int(port)))
    ls.listen(16)
    n = 0
    while True:
        c, _ = ls.accept()
        if ctx:
            try:
                c = ctx.wrap_socket(c, server_side=True)
            except OSError:
                c.close()
                continue
        n += 1
        threading.Thread(target=serve, args=(c, d, n), daemon=True).start()


def client(host, port, vhost, path, auth, rawfile):
    s = socket.create_connection((host, int(port)), timeout=10)
    key = base64.b64encode(os.urandom(16))
    s.sendall(b"GET " + path.encode() + b" HTTP/1.1\r\nHost: " + vhost.encode() +
              b"\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: " + key +
              b"\r\nSec-WebSocket-Version: 13\r\nAuthorization: " + auth.encode() +
              b"\r\nSec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n\r\n")
    head, buf = read_head(s)
    status = head.split(b"\r\n")[0].decode()
    if " 101 " not in status:
        print(status)
        return
    frames(lambda: s.recv(65536), buf, rawfile)


def frames(recv, buf, rawfile):
    """Prints the frames read with recv() (b"" at the end), buf the bytes already read."""
    raw = open(rawfile, "wb")
    raw.write(buf)
    msg, op0 = b"", 0

    def need(n):
        nonlocal buf
        while len(buf) < n:
            d = recv()
            if not d:
                raise EOFError
            raw.write(d)
            buf += d

    def take(n):
        nonlocal buf
        need(n)
        d, buf = buf[:n], buf[n:]
        return d

    try:
        while True:
            h = take(2)
            n = h[1] & 0x7F
            if n == 126:
                n = struct.unpack("!H", take(2))[0]
            elif n == 127:
                n = struct.unpack("!Q", take(8))[0]
            if h[0] & 0x70 or h[1] & 0x80:
                print("bad frame header %02x %02x" % (h[0], h[1]))
            data = take(n)
            op, fin = h[0] & 0x0F, h[0] & 0x80
            if op >= 8:
                if op == 8:
                    code = struct.unpack("!H", data[:2])[0] if len(data) >= 2 else 0
                    print("close", code, data[2:].decode("latin-1"))
                else:
                    print({9: "ping", 10: "pong"}.get(op, "op%d" % op), data.decode("latin-1"))
                continue
            if op != 0:
                op0, msg = op, b""
            msg += data
            if fin:
                if op0 == 1:
                    print("text", msg.decode())
                else:
                    print("binary", len(msg), hashlib.sha256(msg).hexdigest())
    except (EOFError, OSError):
        print("closed")
    raw.close()


def h2client(host, path, cafile, auth, rawfile):
    import ssl
    import h2.config
    import h2.connection
    import h2.events
    ctx = ssl.create_default_context(cafile=cafile)
    ctx.set_alpn_protocols(["h2"])
    s = ctx.wrap_socket(socket.create_connection((host, 443), timeout=10), server_hostname=host)
    c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    c.initiate_connection()
    s.sendall(c.data_to_send())
    pending, state = [], {"sid": None, "done": False}

    def pump():
        data = s.recv(65536)
        if not data:
            state["done"] = True
            return
        for e in c.receive_data(data):
            if isinstance(e, h2.events.RemoteSettingsChanged) and state["sid"] is None:
                sid = state["sid"] = c.get_next_available_stream_id()
                c.send_headers(sid, [(":method", "CONNECT"), (":protocol", "websocket"),
                                     (":scheme", "https"), (":path", path),
                                     (":authority", host), ("sec-websocket-version", "13"),
                                     ("authorization", auth)])
            elif isinstance(e, h2.events.ResponseReceived):
                st = dict(e.headers)[b":status"].decode()
                if st != "200":
                    print("status=" + st)
                    state["done"] = True
            elif isinstance(e, h2.events.DataReceived):
                c.acknowledge_received_data(e.flow_controlled_length, e.stream_id)
                pending.append(e.data)
            elif isinstance(e, (h2.events.StreamEnded, h2.events.StreamReset)):
                state["done"] = True
        out = c.data_to_send()
        if out:
            s.sendall(out)

    def recv():
        while not pending and not state["done"]:
            pump()
        return pending.pop(0) if pending else b""

    try:
        frames(recv, b"", rawfile)
    except OSError:
        print("closed")


if __name__ == "__main__":
    a = sys.argv
    if a[1] == "server":
        server(*a[2:7])
    elif a[1] == "h2client":
        h2client(*a[2:7])
    elif a[1] == "client":
        client(*a[2:8])
    elif a[1] == "expect":  # the lines the agent should see for messages 3 and 4
        real, surr = a[2].encode(), a[3].encode()
        for m in (b"b" * 200 + base64.b64encode(surr) + b"b" * 100,
                  big(real).replace(real, surr)):
            print("binary", len(m), hashlib.sha256(m).hexdigest())
