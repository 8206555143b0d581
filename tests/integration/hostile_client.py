#!/usr/bin/python3
"""Clients that misbehave on purpose, for test_hostile.sh (stdlib only).

usage: hostile_client.py MODE [options]
  stall HOST PORT [--tls SNI --ca F] [--connect AUTH] [--secs S] [--upgrade] < request
        sends the request, reads nothing for S seconds (default 4), then closes; with
        --upgrade it first reads the 101 head. Prints "sent N" (request bytes).
  tunnel-stall HOST PORT AUTH --tls SNI --ca F [--secs S]
        CONNECT AUTH, a TLS handshake inside with that SNI (verified against F), then reads
        nothing for S seconds.
  pipeline HOST PORT --host H [--mib M] [--secs S]
        pipelined "GET / HTTP/1.1" requests for H (blocked by policy), never reading any
        answer, for at most M MiB or S seconds; prints "sent N".
  hello HOST PORT AUTH SNI-HEX
        CONNECT AUTH, then a hand-made TLS ClientHello whose server_name is the bytes
        SNI-HEX (any length, any byte); prints what comes back.
"""
import argparse
import socket
import ssl
import struct
import sys
import time


def connect_tunnel(s, auth):
    s.sendall(b"CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (auth.encode(), auth.encode()))
    got = b""
    while b"\r\n\r\n" not in got:
        d = s.recv(65536)
        if not d:
            break
        got += d
    if not got.startswith(b"HTTP/1.1 200 "):
        sys.stdout.write("CONNECT refused: %r\n" % got[:200])
        sys.exit(1)


def hold(s, secs):
    s.setblocking(True)
    time.sleep(secs)
    s.close()


def client_hello(sni):
    """A TLS 1.2 ClientHello with one cipher suite and a server_name of raw bytes sni."""
    name = struct.pack("!BH", 0, len(sni)) + sni
    sni_ext = struct.pack("!HH", 0, len(name) + 2) + struct.pack("!H", len(name)) + name
    body = (b"\x03\x03" + bytes(32) + b"\x00" + b"\x00\x02\xc0\x2f" + b"\x01\x00"
            + struct.pack("!H", len(sni_ext)) + sni_ext)
    hs = b"\x01" + struct.pack("!I", len(body))[1:] + body
    return b"\x16\x03\x01" + struct.pack("!H", len(hs)) + hs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode")
    ap.add_argument("host")
    ap.add_argument("port", type=int)
    ap.add_argument("rest", nargs="*")
    ap.add_argument("--tls")
    ap.add_argument("--ca")
    ap.add_argument("--connect")
    ap.add_argument("--secs", type=float, default=4)
    ap.add_argument("--upgrade", action="store_true")
    ap.add_argument("--host-header", "--host", dest="hosthdr")
    ap.add_argument("--mib", type=float, default=20)
    a = ap.parse_args()
    s = socket.create_connection((a.host, a.port), timeout=10)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
    if a.mode == "stall":
        req = sys.stdin.buffer.read()
        if a.connect:
            connect_tunnel(s, a.connect)
        if a.tls:
            ctx = ssl.create_default_context(cafile=a.ca)
            ctx.set_alpn_protocols(["http/1.1"])
            s = ctx.wrap_socket(s, server_hostname=a.tls)
        s.sendall(req)
        if a.upgrade:
            got = b""
            while b"\r\n\r\n" not in got:
                d = s.recv(1)
                if not d:
                    break
                got += d
            sys.stdout.write(got.split(b"\r\n")[0].decode("latin-1") + "\n")
        sys.stdout.write("sent %d\n" % len(req))
        sys.stdout.flush()
        hold(s, a.secs)
    elif a.mode == "tunnel-stall":
        connect_tunnel(s, a.rest[0])
        ctx = ssl.create_default_context(cafile=a.ca)
        s = ctx.wrap_socket(s, server_hostname=a.tls)
        sys.stdout.write("handshake ok\n")
        sys.stdout.flush()
        hold(s, a.secs)
    elif a.mode == "pipeline":
        one = b"GET / HTTP/1.1\r\nHost: %s\r\n\r\n" % a.hosthdr.encode()
        batch = one * (65536 // len(one))
        limit = int(a.mib * (1 << 20))
        sent = 0
        s.setblocking(False)
        end = time.time() + a.secs
        while sent < limit and time.time() < end:
            try:
                sent += s.send(batch)
            except BlockingIOError:
                time.sleep(0.01)
            except OSError:
                break
        sys.stdout.write("sent %d\n" % sent)
        sys.stdout.flush()
        s.close()
    elif a.mode == "hello":
        connect_tunnel(s, a.rest[0])
        s.sendall(client_hello(bytes.fromhex(a.rest[1])))
        s.settimeout(2)
        got = b""
        try:
            while True:
                d = s.recv(65536)
                if not d:
                    got += b"<EOF>"
                    break
                got += d
        except socket.timeout:
            got += b"<QUIET>"
        except OSError:
            got += b"<RESET>"
        sys.stdout.write(repr(got[:200]) + "\n")
    else:
        sys.exit("unknown mode " + a.mode)


main()
