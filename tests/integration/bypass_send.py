#!/usr/bin/python3
"""raw.py with TLS and pauses: sends stdin's bytes and prints what comes back until the peer
closes or goes quiet.
usage: bypass_send.py [--connect AUTHORITY] [--tls SNI|-] [--ca FILE] [--quiet S] [--gap S]
                      HOST PORT < bytes
The literal marker <PAUSE> in the input splits it into pieces sent --gap seconds apart
(default 0.3), so a request head can reach the upstream before its body. With --tls the
bytes go inside a TLS connection (SNI "-" sends no server_name). Prints <EOF> at a clean
end, <RESET> on a reset, <HANDSHAKE-FAILED ...> when TLS does not come up, <SEND-FAILED>
when the peer closed before everything was sent.
With --connect the connection first asks an explicit proxy for a tunnel (CONNECT AUTHORITY);
when the answer is not 200 that answer is printed and nothing else is sent; otherwise the
rest happens inside the tunnel and only what comes back through it is printed."""
import argparse
import socket
import ssl
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("--connect")
ap.add_argument("--tls")
ap.add_argument("--ca")
ap.add_argument("--quiet", type=float, default=0.7)
ap.add_argument("--gap", type=float, default=0.3)
ap.add_argument("host")
ap.add_argument("port", type=int)
a = ap.parse_args()
pieces = sys.stdin.buffer.read().split(b"<PAUSE>")
s = socket.create_connection((a.host, a.port), timeout=5)
if a.connect is not None:
    s.sendall(b"CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % ((a.connect.encode(),) * 2))
    got = b""
    while b"\r\n\r\n" not in got:
        try:
            b = s.recv(65536)
        except OSError:
            b = b""
        if not b:
            break
        got += b
    if not got.startswith(b"HTTP/1.1 200 "):
        s.settimeout(a.quiet)
        try:
            while True:
                b = s.recv(65536)
                if not b:
                    got += b"<EOF>"
                    break
                got += b
        except OSError:
            pass
        sys.stdout.buffer.write(got)
        sys.exit(0)
if a.tls is not None:
    ctx = ssl.create_default_context(cafile=a.ca)
    if a.tls == "-":
        ctx.check_hostname = False
    ctx.set_alpn_protocols(["http/1.1"])
    try:
        s = ctx.wrap_socket(s, server_hostname=None if a.tls == "-" else a.tls)
    except (ssl.SSLError, OSError) as e:
        sys.stdout.write("<HANDSHAKE-FAILED %s>" % e)
        sys.exit(0)
out = b""
try:
    for i, p in enumerate(pieces):
        if i > 0:
            time.sleep(a.gap)
        s.sendall(p)
except OSError:
    out += b"<SEND-FAILED>"
s.settimeout(a.quiet)
deadline = time.time() + 10
while time.time() < deadline:
    try:
        b = s.recv(65536)
    except socket.timeout:
        break
    except ConnectionResetError:
        out += b"<RESET>"
        break
    except ssl.SSLError as e:
        out += b"<TLS-ERROR %s>" % str(e).encode()
        break
    if not b:
        out += b"<EOF>"
        break
    out += b
sys.stdout.buffer.write(out)
