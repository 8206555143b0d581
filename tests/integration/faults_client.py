#!/usr/bin/python3
"""Misbehaving clients for the fault tests (stdlib only). Each prints one line of figures.

  faults_client.py slowloris HOST PORT N SECONDS HOSTNAME
      N connections each send one byte of a request head per second for SECONDS; prints
      how many the server closed, and when (first/median/last, seconds after the start)
  faults_client.py idle HOST PORT N SECONDS
      N connections that send nothing; same figures
  faults_client.py halfclose HOST PORT HOSTNAME PATH [tls CAFILE]
      sends a whole request, shuts down its sending side, prints the status line and
      whether the body arrived ("status=200 body=ok eof=1")
  faults_client.py abort HOST PORT HOSTNAME TOTAL SENT [rst]
      starts a POST of TOTAL bytes, sends SENT of them, then closes (or resets)
  faults_client.py trickle HOST PORT HOSTNAME PIECES GAP
      a POST of PIECES x 1000 bytes, one piece every GAP seconds; prints the answer as halfclose
  faults_client.py slowread HOST PORT HOSTNAME PATH PAUSE [STEP GAP]
      sends a GET with a small receive buffer, reads nothing for PAUSE seconds, then reads
      everything (or STEP bytes every GAP seconds); prints "status=200 bytes=N eof=1"
  faults_client.py load HOST PORT HOSTNAME PATH SECONDS [CAFILE]
      requests in a loop for SECONDS: keep-alive, new connections and (with CAFILE) HTTPS
      on 443; prints "total=N ok=N other=N errors=N" (ok = 200; other lists the statuses)
  faults_client.py burst HOST HOSTNAME PATH N N_TLS CAFILE PID
      N connections held open at once (N_TLS of them TLS on 443, the rest plain on 80), one
      keep-alive request each; prints "opened=N ok=N peak_rss_kib=R" (R: PID's RSS while all
      are open), then closes them all
"""
import http.client
import os
import socket
import ssl
import struct
import sys
import time


def closed_figures(socks, seconds, feed):
    t0 = time.time()
    closed = {}
    nxt = t0
    while time.time() - t0 < seconds:
        now = time.time()
        if feed and now >= nxt:
            nxt += 1.0
            for i, s in enumerate(socks):
                if i in closed:
                    continue
                try:
                    s.send(b"a")
                except OSError:
                    closed[i] = now - t0
        for i, s in enumerate(socks):
            if i in closed:
                continue
            try:
                d = s.recv(65536)
                if d == b"" or d:
                    closed[i] = time.time() - t0
            except BlockingIOError:
                pass
            except OSError:
                closed[i] = time.time() - t0
        time.sleep(0.05)
    for s in socks:
        s.close()
    t = sorted(closed.values())
    fig = lambda k: "%.1f" % t[k] if t else "-"
    print("opened=%d closed=%d first=%s median=%s last=%s" % (
        len(socks), len(t), fig(0), fig(len(t) // 2), fig(-1)))


def connect_many(host, port, n):
    socks = []
    for _ in range(n):
        s = socket.create_connection((host, port), timeout=5)
        s.setblocking(False)
        socks.append(s)
    return socks


def slowloris(host, port, n, seconds, name):
    socks = connect_many(host, port, int(n))
    for s in socks:
        s.send(("GET / HTTP/1.1\r\nHost: %s\r\nX-Slow: " % name).encode())
    closed_figures(socks, float(seconds), True)


def idle(host, port, n, seconds):
    closed_figures(connect_many(host, port, int(n)), float(seconds), False)


def halfclose(host, port, name, path, *tls):
    raw = socket.create_connection((host, int(port)), timeout=10)
    s = raw
    if tls:
        ctx = ssl.create_default_context(cafile=tls[1])
        s = ctx.wrap_socket(raw, server_hostname=name)
    s.sendall(("GET %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (path, name)).encode())
    # TCP FIN (no TLS close_notify): shut down the descriptor under the TLS layer
    socket.socket(fileno=os.dup(s.fileno())).shutdown(socket.SHUT_WR)
    data = b""
    eof = 0
    try:
        while True:
            d = s.recv(65536)
            if not d:
                eof = 1
                break
            data += d
    except (OSError, ssl.SSLError) as e:
        data += b" <%s>" % type(e).__name__.encode()
    status = data.split(b"\r\n")[0].split(b" ")[1].decode() if data.startswith(b"HTTP/") else "none"
    body = data.split(b"\r\n\r\n", 1)[1].strip().decode() if b"\r\n\r\n" in data else ""
    print("status=%s body=%s eof=%d" % (status, body or "-", eof))


def abort(host, port, name, total, sent, *rst):
    s = socket.create_connection((host, int(port)), timeout=10)
    s.sendall(("POST /upload HTTP/1.1\r\nHost: %s\r\nContent-Length: %s\r\n\r\n"
               % (name, total)).encode())
    left = int(sent)
    chunk = b"u" * 65536
    while left > 0:
        k = min(left, len(chunk))
        s.sendall(chunk[:k])
        left -= k
    time.sleep(0.3)
    if rst:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()
    print("sent %s of %s" % (sent, total))


def answer(s):
    data = b""
    eof = 0
    try:
        while True:
            d = s.recv(65536)
            if not d:
                eof = 1
                break
            data += d
            if b"\r\n\r\n" in data:
                head, body = data.split(b"\r\n\r\n", 1)
                cl = [l for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")]
                if cl and len(body) >= int(cl[0].split(b":")[1]):
                    break
    except OSError as e:
        data += b" <%s>" % type(e).__name__.encode()
    status = data.split(b"\r\n")[0].split(b" ")[1].decode() if data.startswith(b"HTTP/") else "none"
    body = data.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in data else b""
    return status, body, eof


def trickle(host, port, name, pieces, gap):
    s = socket.create_connection((host, int(port)), timeout=30)
    n = int(pieces)
    s.sendall(("POST /upload HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n"
               % (name, n * 1000)).encode())
    try:
        for _ in range(n):
            time.sleep(float(gap))
            s.sendall(b"t" * 1000)
    except OSError as e:
        print("status=none body=<%s while sending>" % type(e).__name__)
        return
    status, body, _ = answer(s)
    print("status=%s body=%s" % (status, body.strip().decode(errors="replace") or "-"))


def slowread(host, port, name, path, pause, step=None, gap=None):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(30)
    s.connect((host, int(port)))
    s.sendall(("GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % (path, name)).encode())
    time.sleep(float(pause))
    data = b""
    eof = 0
    try:
        while True:
            if step is not None:
                d = b""
                while len(d) < int(step):
                    piece = s.recv(int(step) - len(d))
                    if not piece:
                        break
                    d += piece
                time.sleep(float(gap))
            else:
                d = s.recv(1 << 20)
            if not d:
                eof = 1
                break
            data += d
    except OSError:
        pass
    status = data.split(b"\r\n")[0].split(b" ")[1].decode() if data.startswith(b"HTTP/") else "none"
    body = len(data.split(b"\r\n\r\n", 1)[1]) if b"\r\n\r\n" in data else 0
    print("status=%s bytes=%d eof=%d" % (status, body, eof))


def load(host, port, name, path, seconds, cafile=None):
    t_end = time.time() + float(seconds)
    total = ok = errors = 0
    other = {}
    conns = [lambda: http.client.HTTPConnection(host, int(port), timeout=10)]
    if cafile:
        ctx = ssl.create_default_context(cafile=cafile)
        conns.append(lambda: http.client.HTTPSConnection(name, 443, timeout=10, context=ctx))
    ka = [c() for c in conns]
    i = 0
    while time.time() < t_end:
        k = i % (2 * len(conns))
        i += 1
        fresh = k >= len(conns)
        c = conns[k % len(conns)]() if fresh else ka[k]
        try:
            c.request("GET", path, headers={"Host": name})
            r = c.getresponse()
            r.read()
            total += 1
            if r.status == 200:
                ok += 1
            else:
                other[r.status] = other.get(r.status, 0) + 1
        except (OSError, http.client.HTTPException) as e:
            total += 1
            errors += 1
            other[type(e).__name__] = other.get(type(e).__name__, 0) + 1
            if not fresh:
                ka[k] = conns[k]()
        if fresh:
            c.close()
    print("total=%d ok=%d other=%s errors=%d" % (total, ok, other or "-", errors))


def response_head(s):
    """Reads until a response head ended (or EOF): the bytes read, the head's end included."""
    data = b""
    while b"\r\n\r\n" not in data:
        d = s.recv(65536)
        if not d:
            raise ValueError("closed before the response head ended")
        data += d
    return data


def burst(host, name, path, n, n_tls, cafile, pid):
    ctx = ssl.create_default_context(cafile=cafile)
    req = ("GET %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (path, name)).encode()
    held, ok = [], 0
    for i in range(int(n)):
        try:
            s = socket.create_connection((host, 443 if i < int(n_tls) else 80), timeout=10)
            if i < int(n_tls):
                s = ctx.wrap_socket(s, server_hostname=name)
            held.append(s)
            s.sendall(req)
            head, rest = response_head(s).split(b"\r\n\r\n", 1)
            want = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    want = int(line.split(b":")[1])
            while len(rest) < want:
                rest += s.recv(65536)
            ok += head.startswith(b"HTTP/1.1 200 ")
        except (OSError, ValueError):
            pass
    rss = [l.split()[1] for l in open("/proc/%s/status" % pid) if l.startswith("VmRSS:")][0]
    print("opened=%d ok=%d peak_rss_kib=%s" % (len(held), ok, rss), flush=True)
    for s in held:
        s.close()


def together(host, name, path, n):
    """N plain keep-alive connections opened first, then one request on each at once, so that
    all are in flight together; prints how many were answered 200."""
    req = ("GET %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (path, name)).encode()
    socks = [socket.create_connection((host, 80), timeout=30) for _ in range(int(n))]
    for s in socks:
        s.sendall(req)
    ok = 0
    for s in socks:
        try:
            ok += response_head(s).startswith(b"HTTP/1.1 200 ")
        except (OSError, ValueError):
            pass
    print("ok=%d" % ok, flush=True)
    for s in socks:
        s.close()


if __name__ == "__main__":
    {"slowloris": slowloris, "idle": idle, "halfclose": halfclose, "abort": abort,
     "load": load, "trickle": trickle, "slowread": slowread, "burst": burst,
     "together": together}[sys.argv[1]](*sys.argv[2:])
