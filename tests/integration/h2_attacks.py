"""Bypass and attack cases for h2_raw.py (test_h2_bypass.sh): each builds frames by hand on a
fresh connection c (SNI as given on the command line, normally ok.test) and prints what came
back with c.report() or a summary line."""
import os
import socket
import struct
import sys
import time

# an ordinary request; the bypass cases below change one thing in it
BASE = [(":method", "GET"), (":scheme", "https"), (":authority", "ok.test"), (":path", "/api/echo")]


def replace(fields, name, value):
    return [(k, value if k == name else v) for k, v in fields]


def without(fields, name):
    return [(k, v) for k, v in fields if k != name]


# the bypass cases: name -> the request's fields (stream 1, END_STREAM on HEADERS)
BYPASS = {
    "authority-sni": replace(BASE, ":authority", "evil.test"),
    "authority-host": BASE + [("host", "evil.test")],
    "host-authority": replace(BASE, ":authority", "evil.test") + [("host", "ok.test")],
    "host-only-evil": without(BASE, ":authority") + [("host", "evil.test")],
    "host-only-ok": without(BASE, ":authority") + [("host", "ok.test")],
    "no-host": without(BASE, ":authority"),
    "authority-userinfo": replace(BASE, ":authority", "ok.test@evil.test"),
    "authority-port": replace(BASE, ":authority", "evil.test:443"),
    "connect": [(":method", "CONNECT"), (":authority", "evil.test:443")],
    "connect-allowed": [(":method", "CONNECT"), (":authority", "ok.test:443")],
    "xconnect-blocked-path": [(":method", "CONNECT"), (":protocol", "websocket"),
                              (":scheme", "https"), (":authority", "ok.test"), (":path", "/private"),
                              ("sec-websocket-version", "13")],
    "xconnect-evil": [(":method", "CONNECT"), (":protocol", "websocket"), (":scheme", "https"),
                      (":authority", "evil.test"), (":path", "/api/ws"),
                      ("sec-websocket-version", "13")],
    "xconnect-other-protocol": [(":method", "CONNECT"), (":protocol", "connect-udp"),
                                (":scheme", "https"), (":authority", "ok.test"),
                                (":path", "/api/ws")],
    "dup-path": BASE + [(":path", "/private")],
    "dup-authority": BASE + [(":authority", "evil.test")],
    "path-noslash": replace(BASE, ":path", "api/echo"),
    "path-absolute": replace(BASE, ":path", "https://evil.test/api/echo"),
    "path-empty": replace(BASE, ":path", ""),
    "scheme-other": replace(BASE, ":scheme", "ftp"),
    "unknown-pseudo": BASE + [(":foo", "bar")],
    "uppercase-name": BASE + [("X-Upper", "1")],
    "pseudo-after-regular": [(":method", "GET"), (":scheme", "https"), (":authority", "ok.test"),
                             ("x-regular", "1"), (":path", "/api/echo")],
    "connection": BASE + [("connection", "keep-alive")],
    "keep-alive": BASE + [("keep-alive", "timeout=5")],
    "proxy-connection": BASE + [("proxy-connection", "keep-alive")],
    "transfer-encoding": BASE + [("transfer-encoding", "chunked")],
    "upgrade": BASE + [("upgrade", "websocket")],
    "te-gzip": BASE + [("te", "gzip")],
    "space-in-name": BASE + [("x bad", "1")],
    "crlf-in-value": BASE + [("x-inject", "a\r\nhost: evil.test")],
}


def handshake(c):
    """Waits for the server's SETTINGS and its ack of ours, as a polite client would."""
    c.pump(lambda: c.server_settings and c.acks_seen >= 1, 10)


def bypass(c, name):
    c.request(1, BYPASS[name])
    c.wait([1], 10)
    c.report([1])


def rapid_reset(c, n):
    """n streams, each cancelled right after its HEADERS: what nghttp2 calls rapid reset."""
    handshake(c)
    sent = 0
    try:
        for i in range(n):
            sid = 1 + 2 * i
            c.send(c.frame_headers(sid, BASE[:3] + [(":path", "/api/small?rr=%d" % i)]) +
                   frame(3, 0, sid, struct.pack(">I", 8)))
            sent += 1
            if i % 50 == 49:
                c.recv(0.01)
                if c.goaway or c.closed:
                    break
    except OSError:
        pass
    c.pump(lambda: c.goaway is not None, 5)
    print("sent=%d" % sent)
    print(c.goaway_line())


def continuation_flood(c, n):
    """HEADERS without END_HEADERS, then n CONTINUATION frames of 16 bytes each (of a block
    of small fields: no single field is over any size limit)."""
    handshake(c)
    block = c.enc.encode(BASE + [("x-c%d" % i, "v" * 8) for i in range(2000)], huffman=False)
    c.send(frame(1, 0, 1, block[:64]))
    sent, pos = 0, 64
    try:
        while sent < n and pos < len(block):
            c.send(frame(9, 0, 1, block[pos:pos + 16]))
            pos += 16
            sent += 1
            if sent % 100 == 0:
                c.recv(0.01)
                if c.goaway or c.closed:
                    break
    except OSError:
        pass
    c.pump(lambda: c.goaway is not None, 5)
    print("continuations=%d" % sent)
    c.report([1])


def hpack_bomb(c, n):
    """One 4000-byte field put in the HPACK table, then n one-byte references to it in the same
    block: n * 4 KB decoded from a 10 KB frame. Then an ordinary request on the connection."""
    handshake(c)
    block = c.enc.encode(BASE + [("x-bomb", "A" * 4000)], huffman=False)
    # the x-bomb field is the newest entry of the dynamic table: index 62 (0x80 | 62)
    block += b"\xbe" * n
    c.send(frame(1, 5, 1, block))
    c.wait([1], 10)
    c.get(3, "ok.test", "/api/echo?after=bomb")
    c.wait([3], 10)
    c.report([1, 3])


def flood(c, kind, n):
    """n SETTINGS (or PING) frames from a client that reads nothing until it has sent them all
    (a small receive buffer): acks pile up on airlock's side."""
    handshake(c)
    c.answer_control = False
    one = frame(4, 0, 0) if kind == "settings" else frame(6, 0, 0, b"12345678")
    c.s.settimeout(5)
    sent = 0
    t0 = time.time()
    try:
        while sent < n and time.time() - t0 < 30:
            c.send(one * 100)
            sent += 100
    except (socket.timeout, OSError) as e:
        print("send stopped: %s" % type(e).__name__)
    c.pump(lambda: c.goaway is not None, 10)
    print("sent=%d acks=%d pings=%d" % (sent, c.acks_seen, c.pings_seen))
    print(c.goaway_line())


def settings_entries(c, n):
    """One SETTINGS frame with n entries (SETTINGS_ENABLE_PUSH=0 repeated)."""
    handshake(c)
    c.send(frame(4, 0, 0, struct.pack(">HI", 2, 0) * n))
    c.pump(lambda: c.goaway is not None, 5)
    print(c.goaway_line())


def too_many_streams(c, n, eager):
    """n POST streams kept open (no END_STREAM) at once, then each ended with an empty DATA
    frame. eager: sent right after the preface, before airlock's SETTINGS are acknowledged;
    else after (then the limit is in force for the client too)."""
    if not eager:
        handshake(c)
    sids = [1 + 2 * i for i in range(n)]
    try:
        for sid in sids:
            f = replace(BASE, ":method", "POST") + [("content-type", "text/plain")]
            c.request(sid, replace(f, ":path", "/api/echo?s=%d" % sid), end_stream=False)
        c.pump(lambda: False, 1.0)
        for sid in sids:
            if c.streams[sid].rst is None and not c.closed:
                c.send(frame(0, 1, sid))
        c.wait(sids, 20)
    except OSError:
        c.closed = True
    print("max_concurrent_streams=%s" % c.server_settings.get(3))
    # a stream answered and then reset (NO_ERROR: the answer came before the request's end) is
    # answered, not refused
    refused = [s for s in sids if c.streams[s].rst is not None and c.streams[s].status is None]
    codes = sorted(set(c.streams[s].rst for s in refused))
    ok = [s for s in sids if c.streams[s].status == 200]
    print("answered=%d refused=%d codes=%s" % (len(ok), len(refused), ",".join(map(str, codes))))
    print(c.goaway_line())


def header_over_cap(c, size, per_field):
    """Fields of per_field bytes each (not Huffman-coded), size bytes in all, in HEADERS +
    CONTINUATION frames of 16 KiB; then an ordinary request on the connection."""
    handshake(c)
    fields = [("x-big%d" % i, os.urandom(per_field // 2).hex()) for i in range(size // per_field)]
    block = c.enc.encode(BASE + fields, huffman=False)
    pieces = [block[i:i + 16384] for i in range(0, len(block), 16384)]
    c.stream(1)
    try:
        for i, p in enumerate(pieces):
            last = i == len(pieces) - 1
            if i == 0:
                c.send(frame(1, 1 | (4 if last else 0), 1, p))
            else:
                c.send(frame(9, 4 if last else 0, 1, p))
        c.wait([1], 10)
        c.get(3, "ok.test", "/api/echo?after=big")
        c.wait([3], 10)
    except OSError:
        c.closed = True
        c.pump(lambda: False, 1)
    print("frames=%d" % len(pieces))
    c.report([1, 3])


def many_fields(c, n):
    """n small fields; then an ordinary request on the connection."""
    handshake(c)
    c.request(1, BASE + [("x-f%d" % i, "v") for i in range(n)])
    c.wait([1], 10)
    c.get(3, "ok.test", "/api/echo?after=fields")
    c.wait([3], 10)
    c.report([1, 3])


def held_headers(c, nconn, nstreams, refs, pid, secs):
    """The HPACK amplification held (test_h2_memory.sh): nconn connections (c the first), each
    opening nstreams GET streams (one frame each) whose header list is refs indexed references
    to one 3,938-byte dynamic-table entry: about 48 bytes on the wire, 63 KB decoded (just under
    PX_H2_HEADER_LIST_MAX). The host's upstream never answers, so every stream airlock accepts
    holds its head for as long as the connection lives. Prints what came back (streams reset,
    their codes, GOAWAYs) and airlock's VmRSS and VmHWM while everything is held."""
    addr, port, sni, cafile = sys.argv[1:5]
    before = status_kb(pid)
    conns = [c]
    try:
        for _ in range(nconn - 1):
            conns.append(c.__class__(addr, int(port), sni, cafile))
    except OSError as e:
        print("connect failed after %d connections: %s" % (len(conns), e))
    big = ("x-bomb", "A" * 3900)  # 6 + 3900 + 32 = 3938 bytes as HPACK counts an entry
    for k, cn in enumerate(conns):
        handshake(cn)
        out = []
        for i in range(nstreams):
            sid = 1 + 2 * i
            cn.stream(sid)
            # the changing fields are never indexed: the big entry stays the newest
            f = [(":method", "GET"), (":scheme", "https"), (":authority", sni, True),
                 (":path", "/api/hold?c=%d&s=%d" % (k, sid), True)] + [big] * refs
            out.append(frame(1, 5, sid, cn.enc.encode(f, huffman=False)))
        try:
            cn.send(b"".join(out))
        except OSError:
            cn.closed = True
    # airlock decodes, decides and opens upstream streams: let it, reading what comes back
    end = time.time() + secs
    while time.time() < end:
        for cn in conns:
            if not cn.closed:
                cn.recv(0.02)
    after = status_kb(pid)
    total = held = answered = 0
    codes, goaways = {}, {}
    for cn in conns:
        for st in cn.streams.values():
            total += 1
            if st.rst is not None:
                codes[st.rst] = codes.get(st.rst, 0) + 1
            elif st.status is not None:
                answered += 1
            elif not cn.closed and cn.goaway is None:
                held += 1
        g = "none" if cn.goaway is None else str(cn.goaway[0])
        goaways[g] = goaways.get(g, 0) + 1
    print("conns=%d streams=%d held=%d answered=%d reset=%s goaway=%s" % (
        len(conns), total, held, answered,
        ",".join("%d:%d" % kv for kv in sorted(codes.items())) or "none",
        ",".join("%s:%d" % kv for kv in sorted(goaways.items()))))
    print("rss_before=%d rss_held=%d hwm=%d" % (before[0], after[0], after[1]))
    for cn in conns:
        try:
            cn.s.close()
        except OSError:
            pass


def status_kb(pid):
    """airlock's VmRSS and VmHWM (KiB)."""
    rss = hwm = -1
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
            elif line.startswith("VmHWM:"):
                hwm = int(line.split()[1])
    return rss, hwm


def blackhole(addr, port, cert, key):
    """An HTTP/2 upstream that never answers: TLS with ALPN h2, its SETTINGS (1000 concurrent
    streams) and an ack, then it reads and drops everything, printing "headers" for each
    HEADERS frame (so a test counts the requests it holds). Runs until killed."""
    import asyncio
    import ssl

    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(cert, key)
    ctx.set_alpn_protocols(["h2"])
    settings = struct.pack(">HI", 3, 1000)

    async def serve(reader, writer):
        writer.write(struct.pack(">I", len(settings))[1:] + bytes([4, 0]) + b"\0" * 4 + settings +
                     b"\0\0\0\x04\x01\0\0\0\0")
        buf = b""
        try:
            d = await reader.readexactly(24)  # the client preface
            while True:
                d = await reader.read(65536)
                if not d:
                    break
                buf += d
                while len(buf) >= 9:
                    n = struct.unpack(">I", b"\0" + buf[:3])[0]
                    if len(buf) < 9 + n:
                        break
                    if buf[3] == 1:
                        print("headers")
                    buf = buf[9 + n:]
        except (OSError, asyncio.IncompleteReadError):
            pass
        writer.close()

    async def main():
        srv = await asyncio.start_server(serve, addr, int(port), ssl=ctx, backlog=1024)
        async with srv:
            await srv.serve_forever()

    asyncio.run(main())


frame = None


def run(c, case, args, raw):
    global frame
    frame = raw.frame
    c.frame_headers = lambda sid, fields: raw.frame(1, 5, sid, c.enc.encode(fields))
    if case in BYPASS:
        bypass(c, case)
    elif case == "rapid-reset":
        rapid_reset(c, int(args[0]))
    elif case == "continuation-flood":
        continuation_flood(c, int(args[0]))
    elif case == "hpack-bomb":
        hpack_bomb(c, int(args[0]))
    elif case in ("settings-flood", "ping-flood"):
        flood(c, case.split("-")[0], int(args[0]))
    elif case == "settings-entries":
        settings_entries(c, int(args[0]))
    elif case in ("too-many-streams", "too-many-streams-eager"):
        too_many_streams(c, int(args[0]), case.endswith("eager"))
    elif case == "header-over-cap":
        header_over_cap(c, int(args[0]), int(args[1]))
    elif case == "many-fields":
        many_fields(c, int(args[0]))
    elif case == "held-headers":
        held_headers(c, int(args[0]), int(args[1]), int(args[2]), int(args[3]), float(args[4]))
    else:
        print("unknown case " + case)
        raise SystemExit(2)


if __name__ == "__main__":
    # h2_attacks.py blackhole ADDR PORT CERT KEY: the upstream of held_headers
    if len(sys.argv) == 6 and sys.argv[1] == "blackhole":
        blackhole(*sys.argv[2:])
    else:
        print("usage: h2_attacks.py blackhole ADDR PORT CERT KEY")
        sys.exit(2)
