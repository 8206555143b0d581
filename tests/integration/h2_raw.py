#!/usr/bin/python3
"""A raw HTTP/2 client over TLS for the h2 tests: frames are built by hand (hpack for header
blocks), so it can send what a well-behaved client library refuses to (bad pseudo-headers,
floods, CONTINUATION runs, HPACK bombs) and see exactly what comes back on each stream.

  h2_raw.py ADDR PORT SNI CAFILE CASE [ARGS...]

Each case prints one line per stream, "sid=N status=S rst=CODE error=E len=L", then a line
"goaway=CODE|none closed=0|1", and exits 0 (the shell decides what is right). Exit 2: the
connection could not be made (TLS, ALPN).
"""
import json
import os
import socket
import ssl
import struct
import sys
import time

import hpack

DATA, HEADERS, PRIORITY, RST, SETTINGS, PUSH, PING, GOAWAY, WINUP, CONT = range(10)
END_STREAM, ACK, END_HEADERS, PADDED, PRIO = 0x1, 0x1, 0x4, 0x8, 0x20
TRACE = os.environ.get("H2RAW_TRACE")
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def frame(ftype, flags, sid, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + struct.pack(">I", sid) + payload


class Stream:
    def __init__(self):
        self.status = None
        self.headers = []
        self.trailers = []
        self.body = bytearray()
        self.ended = False
        self.rst = None


class Conn:
    """One client connection. stuck: stream ids whose window is never opened again."""

    def __init__(self, addr, port, sni, cafile, rcvbuf=None, settings=None, conn_window=16 << 20):
        raw = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf:
            raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        raw.settimeout(10)
        raw.connect((addr, port))
        ctx = ssl.create_default_context(cafile=cafile)
        ctx.set_alpn_protocols(["h2"])
        self.s = ctx.wrap_socket(raw, server_hostname=sni)
        if self.s.selected_alpn_protocol() != "h2":
            print("alpn=%s" % self.s.selected_alpn_protocol())
            sys.exit(2)
        self.enc = hpack.Encoder()
        self.dec = hpack.Decoder()
        self.dec.max_header_list_size = 1 << 30
        self.buf = b""
        self.streams = {}
        self.goaway = None
        self.closed = False
        self.stuck = set()
        self.server_settings = {}
        self.acks_seen = 0
        self.pings_seen = 0
        self.answer_control = True
        self.hblock = None  # (sid, flags, bytes) while a header block continues
        payload = b""
        for k, v in (settings or {}).items():
            payload += struct.pack(">HI", k, v)
        self.send(PREFACE + frame(SETTINGS, 0, 0, payload))
        if conn_window > 65535:
            self.send(frame(WINUP, 0, 0, struct.pack(">I", conn_window - 65535)))

    def send(self, data):
        self.s.sendall(data)

    def stream(self, sid):
        return self.streams.setdefault(sid, Stream())

    def block(self, fields):
        return self.enc.encode(fields)

    def request(self, sid, fields, end_stream=True, body=None):
        """HEADERS (one frame) for sid; fields a list of (name, value) sent as given."""
        self.stream(sid)
        flags = END_HEADERS | (END_STREAM if end_stream and body is None else 0)
        self.send(frame(HEADERS, flags, sid, self.block(fields)))
        if body is not None:
            self.send(frame(DATA, END_STREAM if end_stream else 0, sid, body))

    def get(self, sid, authority, path, extra=(), method="GET"):
        f = [(":method", method), (":scheme", "https"), (":authority", authority), (":path", path)]
        self.request(sid, f + list(extra))

    def recv(self, timeout):
        self.s.settimeout(max(timeout, 0.01))
        try:
            d = self.s.recv(65536)
        except socket.timeout:
            return True
        except (ConnectionError, ssl.SSLError, OSError):
            self.closed = True
            return False
        if not d:
            self.closed = True
            return False
        self.buf += d
        while len(self.buf) >= 9:
            n = struct.unpack(">I", b"\0" + self.buf[:3])[0]
            if len(self.buf) < 9 + n:
                break
            ftype, flags = self.buf[3], self.buf[4]
            sid = struct.unpack(">I", self.buf[5:9])[0] & 0x7FFFFFFF
            payload = self.buf[9:9 + n]
            self.buf = self.buf[9 + n:]
            self.on_frame(ftype, flags, sid, payload)
        return True

    def on_frame(self, ftype, flags, sid, p):
        if TRACE:
            sys.stderr.write("frame type=%d flags=%#x sid=%d len=%d\n" % (ftype, flags, sid, len(p)))
        if ftype in (DATA, HEADERS) and flags & PADDED:
            p = p[1:len(p) - p[0]]
        if ftype == DATA:
            st = self.stream(sid)
            st.body += p
            if p:
                # the connection window always opens again; a stuck stream's never does
                wu = frame(WINUP, 0, 0, struct.pack(">I", len(p)))
                if sid not in self.stuck and not flags & END_STREAM:
                    wu += frame(WINUP, 0, sid, struct.pack(">I", len(p)))
                self.send(wu)
            if flags & END_STREAM:
                st.ended = True
        elif ftype == HEADERS:
            if flags & PRIO:
                p = p[5:]
            self.hblock = (sid, flags, p)
            if flags & END_HEADERS:
                self.end_block()
        elif ftype == CONT and self.hblock:
            hsid, hflags, hp = self.hblock
            self.hblock = (hsid, hflags, hp + p)
            if flags & END_HEADERS:
                self.end_block()
        elif ftype == RST:
            self.stream(sid).rst = struct.unpack(">I", p[:4])[0]
        elif ftype == SETTINGS:
            if flags & ACK:
                self.acks_seen += 1
            else:
                for i in range(0, len(p) - 5, 6):
                    k, v = struct.unpack(">HI", p[i:i + 6])
                    self.server_settings[k] = v
                if self.answer_control:
                    self.send(frame(SETTINGS, ACK, 0))
        elif ftype == PING:
            if flags & ACK:
                self.pings_seen += 1
            elif self.answer_control:
                self.send(frame(PING, ACK, 0, p))
        elif ftype == GOAWAY:
            last, code = struct.unpack(">II", p[:8])
            self.goaway = (code, last & 0x7FFFFFFF, p[8:])

    def end_block(self):
        sid, flags, block = self.hblock
        self.hblock = None
        st = self.stream(sid)
        fields = self.dec.decode(block, raw=True)
        status = [v for k, v in fields if k == b":status"]
        if status and int(status[0]) >= 200 and st.status is None:
            st.status = int(status[0])
            st.headers = fields
        elif not status:
            st.trailers = fields
        if flags & END_STREAM:
            st.ended = True

    def done(self, sid):
        st = self.streams.get(sid)
        return st is not None and (st.ended or st.rst is not None)

    def pump(self, until, timeout=10):
        end = time.time() + timeout
        while not until() and not self.closed and time.time() < end:
            if not self.recv(end - time.time()):
                break
            if self.goaway and self.goaway[0] != 0:
                # a connection error: read what is still coming, then stop
                self.recv(0.3)
                break
        return until()

    def wait(self, sids, timeout=10):
        return self.pump(lambda: all(self.done(s) for s in sids), timeout)

    def report(self, sids=None):
        for sid in sorted(sids if sids is not None else self.streams):
            st = self.streams.get(sid) or Stream()
            err = "-"
            if st.body[:1] == b"{":
                try:
                    err = json.loads(bytes(st.body)).get("error", "-")
                except ValueError:
                    pass
            print("sid=%d status=%s rst=%s error=%s len=%d" % (
                sid, st.status, "-" if st.rst is None else st.rst, err, len(st.body)))
        print(self.goaway_line())

    def goaway_line(self):
        g = "none" if self.goaway is None else str(self.goaway[0])
        return "goaway=%s closed=%d" % (g, 1 if self.closed else 0)


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


# ---- cases ----

def c_get(c, host, path="/api/echo"):
    """One GET: the client's view of an ordinary request."""
    c.get(1, host, path)
    c.wait([1])
    c.report()
    st = c.streams[1]
    sys.stdout.write(bytes(st.body).decode("utf-8", "replace") if st.status == 200 else "")


def c_mixed(c):
    """Four streams at once on one connection (SNI ok.test): allowed, blocked path, blocked
    host (another :authority), allowed again."""
    c.get(1, "ok.test", "/api/echo?s=1")
    c.get(3, "ok.test", "/private?s=3")
    c.get(5, "evil.test", "/api/echo?s=5")
    c.get(7, "ok.test", "/api/echo?s=7")
    c.wait([1, 3, 5, 7])
    c.report()


def c_many(c, n, pid, hold):
    """n concurrent streams on one connection; stream 1 fetches /api/big and its window is
    never opened again (the client never reads it), the others fetch /api/mid. Prints how many
    of the others completed whole, airlock's RSS before and while the stuck stream is open."""
    before = rss_kb(pid)
    c.stuck.add(1)
    sids = [1 + 2 * i for i in range(n)]
    for sid in sids:
        c.get(sid, "ok.test", "/api/big" if sid == 1 else "/api/mid")
    others = sids[1:]
    t0 = time.time()
    c.wait(others, timeout=60)
    took = time.time() - t0
    whole = sum(1 for s in others if c.streams[s].ended and c.streams[s].status == 200
                and len(c.streams[s].body) == 256 * 1024)
    # give airlock time to fill whatever it buffers for the stuck stream, then measure
    end = time.time() + hold
    while time.time() < end and not c.closed:
        c.recv(end - time.time())
    after = rss_kb(pid)
    stuck = c.streams[1]
    for s in others:
        st = c.streams[s]
        if not st.ended:
            print("# incomplete: sid=%d status=%s len=%d rst=%s" % (s, st.status, len(st.body), st.rst))
    print("completed=%d/%d secs=%.1f stuck_status=%s stuck_len=%d stuck_ended=%d rss_before=%d rss_after=%d"
          % (whole, len(others), took, stuck.status, len(stuck.body), 1 if stuck.ended else 0,
             before, after))
    print(c.goaway_line())


def main():
    addr, port, sni, cafile, case = sys.argv[1:6]
    args = sys.argv[6:]
    # a flood's client reads nothing while it sends: a small receive buffer makes that real
    rcvbuf = 4096 if case in ("settings-flood", "ping-flood") else None
    c = Conn(addr, int(port), sni, cafile, rcvbuf=rcvbuf)
    if case == "get":
        c_get(c, *args)
    elif case == "mixed":
        c_mixed(c)
    elif case == "many":
        c_many(c, int(args[0]), int(args[1]), float(args[2]))
    else:
        import h2_attacks
        h2_attacks.run(c, case, args, sys.modules[__name__])


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main()
