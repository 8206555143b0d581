#!/usr/bin/python3
"""Sends raw bytes to HOST PORT and prints what comes back until the peer closes or goes
quiet. usage: raw.py HOST PORT [QUIET_SECONDS] < request-bytes
Escapes in stdin are taken literally; use printf in the caller to build CR LF."""
import socket
import sys
import time

host, port = sys.argv[1], int(sys.argv[2])
quiet = float(sys.argv[3]) if len(sys.argv) > 3 else 0.7
data = sys.stdin.buffer.read()
s = socket.create_connection((host, port), timeout=5)
s.sendall(data)
s.settimeout(quiet)
out = b""
deadline = time.time() + 10
while time.time() < deadline:
    try:
        b = s.recv(65536)
    except socket.timeout:
        break
    except ConnectionResetError:
        out += b"<RESET>"
        break
    if not b:
        out += b"<EOF>"
        break
    out += b
sys.stdout.buffer.write(out)
