#!/usr/bin/python3
"""Peers of test_h2_upstream.sh.

  server IP PORT CERT KEY LOG   an HTTP/2-only TLS upstream (ALPN h2 alone) on python3-h2. Each
                                connection and stream is logged to LOG, one line each:
                                  conn C
                                  stream C SID AUTHORITY METHOD PATH
                                  body C SID LEN [trailers k=v;...]
                                Paths: /get (200, content-length), /echo (200 "got LEN
                                trailers=..."), /trailers (200 of unknown length, then trailers
                                x-checksum: abc and grpc-status: 0), /slow?ms=N (answers after
                                N ms), /rst (RST_STREAM INTERNAL_ERROR at once), /rst-late (a
                                head and some bytes, then RST_STREAM), /goaway (an answer, then
                                GOAWAY; the connection stays open), /big?n=N (N bytes of
                                0123456789abcdef... as the windows allow), /refuse (GOAWAY
                                naming the stream before it, then the end), /close (the
                                connection ends at once).
  chunked IP PORT HOST PATH CA  an HTTP/1.1 client over TLS: a chunked POST with trailers
                                (x-sum: 42), prints the raw answer.
  get IP PORT HOST PATH CA      an HTTP/1.1 GET over TLS, prints the raw answer (to see the
                                chunked framing and its trailers)."""
import asyncio
import socket
import ssl
import sys
import urllib.parse

import h2.config
import h2.connection
import h2.events
import h2.errors
import h2.exceptions


class Conn(asyncio.Protocol):
    count = 0

    def __init__(self, log):
        Conn.count += 1
        self.cid = Conn.count
        self.log = log
        self.h2 = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False))
        self.streams = {}
        self.pending = {}  # stream -> bytes not sent yet (flow control)
        self.transport = None

    def say(self, line):
        self.log.write(line + "\n")
        self.log.flush()

    def connection_made(self, transport):
        self.transport = transport
        self.say("conn %d" % self.cid)
        self.h2.initiate_connection()
        self.flush()

    def flush(self):
        data = self.h2.data_to_send()
        if data and not self.transport.is_closing():
            self.transport.write(data)

    def data_received(self, data):
        try:
            events = self.h2.receive_data(data)
        except Exception as e:  # a protocol error: the test will see the connection end
            self.say("error %d %s" % (self.cid, e))
            self.flush()
            self.transport.close()
            return
        for ev in events:
            self.event(ev)
        self.send_pending()
        self.flush()

    def event(self, ev):
        if isinstance(ev, h2.events.RequestReceived):
            hd = {k.decode(): v.decode() for k, v in ev.headers}
            st = {"h": hd, "body": 0, "trailers": ""}
            self.streams[ev.stream_id] = st
            self.say("stream %d %d %s %s %s" % (self.cid, ev.stream_id, hd.get(":authority"),
                                                hd.get(":method"), hd.get(":path")))
            path = hd.get(":path", "").split("?")[0]
            if path == "/refuse":  # GOAWAY naming the stream before it: this one not processed
                self.h2.close_connection(last_stream_id=max(ev.stream_id - 2, 0))
                self.flush()
                self.transport.close()
                return
            if path == "/close":  # the connection ends under the request
                self.transport.close()
                return
            if ev.stream_ended is not None:
                self.request_done(ev.stream_id)
        elif isinstance(ev, h2.events.DataReceived):
            st = self.streams.get(ev.stream_id)
            if st is not None:
                st["body"] += len(ev.data)
            self.h2.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
            if ev.stream_ended is not None:
                self.request_done(ev.stream_id)
        elif isinstance(ev, h2.events.TrailersReceived):
            st = self.streams.get(ev.stream_id)
            if st is not None:
                st["trailers"] = "".join("%s=%s;" % (k.decode(), v.decode())
                                         for k, v in ev.headers)
            if ev.stream_ended is not None:
                self.request_done(ev.stream_id)
        elif isinstance(ev, h2.events.StreamEnded):
            pass
        elif isinstance(ev, h2.events.StreamReset):
            self.say("reset %d %d %d" % (self.cid, ev.stream_id, ev.error_code))
            self.pending.pop(ev.stream_id, None)

    def send_pending(self):
        for sid in list(self.pending):
            buf = self.pending[sid]
            while buf:
                n = min(len(buf), self.h2.local_flow_control_window(sid),
                        self.h2.max_outbound_frame_size)
                if n <= 0:
                    break
                self.h2.send_data(sid, bytes(buf[:n]))
                del buf[:n]
            if not buf:
                self.h2.end_stream(sid)
                del self.pending[sid]

    def request_done(self, sid):
        st = self.streams.get(sid)
        if st is None or st.get("done"):
            return
        st["done"] = True
        self.say("body %d %d %d %s" % (self.cid, sid, st["body"],
                                       ("trailers " + st["trailers"]) if st["trailers"] else ""))
        url = urllib.parse.urlsplit(st["h"].get(":path", "/"))
        q = urllib.parse.parse_qs(url.query)
        st["q"] = q
        path = url.path
        if path == "/slow":
            ms = int(q.get("ms", ["300"])[0])
            asyncio.get_event_loop().call_later(ms / 1000.0, self.answer, sid, st, "/get")
            return
        self.answer(sid, st, path)

    def answer(self, sid, st, path):
        if self.transport.is_closing():
            return
        try:
            self.respond(sid, st, path)
        except h2.exceptions.StreamClosedError:
            pass
        self.flush()

    def respond(self, sid, st, path):
        if path == "/rst":
            self.h2.reset_stream(sid, h2.errors.ErrorCodes.INTERNAL_ERROR)
            return
        if path == "/rst-late":
            self.h2.send_headers(sid, [(":status", "200")])
            self.h2.send_data(sid, b"partial")
            self.h2.reset_stream(sid, h2.errors.ErrorCodes.INTERNAL_ERROR)
            return
        if path == "/goaway":  # an answer, then GOAWAY: the connection takes no new stream
            body = b"bye\n"
            self.h2.send_headers(sid, [(":status", "200"), ("content-length", "4")])
            self.h2.send_data(sid, body, end_stream=True)
            self.h2.close_connection(last_stream_id=sid)
            return
        if path == "/trailers":
            self.h2.send_headers(sid, [(":status", "200"), ("content-type", "text/plain")])
            self.h2.send_data(sid, b"part one, ")
            self.h2.send_data(sid, b"part two")
            self.h2.send_headers(sid, [("x-checksum", "abc"), ("grpc-status", "0")],
                                 end_stream=True)
            return
        if path == "/big":  # n bytes of a known pattern, as the client's windows allow
            n = int(st["q"].get("n", ["1000000"])[0])
            self.h2.send_headers(sid, [(":status", "200"), ("content-length", str(n))])
            pat = b"0123456789abcdef" * 4096
            self.pending[sid] = bytearray((pat * (n // len(pat) + 1))[:n])
            self.send_pending()
            return
        if path == "/echo":
            body = ("got %d trailers=%s" % (st["body"], st["trailers"])).encode()
        else:
            body = ("hello %s conn %d\n" % (st["h"].get(":authority"), self.cid)).encode()
        self.h2.send_headers(sid, [(":status", "200"), ("content-length", str(len(body))),
                                   ("content-type", "text/plain")])
        self.h2.send_data(sid, body, end_stream=True)

    def connection_lost(self, exc):
        self.say("closed %d" % self.cid)


def server(ip, port, cert, key, logname):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    ctx.set_alpn_protocols(["h2"])
    log = open(logname, "a")
    loop = asyncio.new_event_loop()
    srv = loop.run_until_complete(loop.create_server(lambda: Conn(log), ip, int(port), ssl=ctx))
    print("listening", flush=True)
    try:
        loop.run_forever()
    finally:
        srv.close()


def tls_client(ip, port, host, ca):
    ctx = ssl.create_default_context(cafile=ca)
    ctx.set_alpn_protocols(["http/1.1"])
    s = socket.create_connection((ip, int(port)), timeout=15)
    return ctx.wrap_socket(s, server_hostname=host)


def read_all(s):
    out = b""
    while True:
        try:
            b = s.recv(65536)
        except (socket.timeout, ConnectionResetError):
            break
        if not b:
            break
        out += b
        if out.endswith(b"\r\n\r\n") and b"\r\n0\r\n" in out:
            break
        if b"Content-Length:" in out and b"\r\n\r\n" in out:
            head, _, body = out.partition(b"\r\n\r\n")
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    if len(body) >= int(line.split(b":")[1]):
                        return out
    return out


def chunked(ip, port, host, path, ca):
    s = tls_client(ip, port, host, ca)
    s.sendall(("POST %s HTTP/1.1\r\nHost: %s\r\nTransfer-Encoding: chunked\r\n"
               "Connection: close\r\n\r\n" % (path, host)).encode())
    s.sendall(b"5\r\nhello\r\n6\r\n world\r\n0\r\nx-sum: 42\r\n\r\n")
    sys.stdout.write(read_all(s).decode(errors="replace"))


def get(ip, port, host, path, ca):
    s = tls_client(ip, port, host, ca)
    s.sendall(("GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % (path, host)).encode())
    sys.stdout.write(read_all(s).decode(errors="replace"))


if __name__ == "__main__":
    mode = sys.argv[1]
    {"server": server, "chunked": chunked, "get": get}[mode](*sys.argv[2:])
