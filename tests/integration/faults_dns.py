#!/usr/bin/python3
"""A broken upstream DNS server for the fault tests: names containing "servfail" get
SERVFAIL, every other query is read and never answered (a resolver that times out).
usage: faults_dns.py ADDR [PORT]"""
import socket
import sys

s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 53))
print("ready", flush=True)
while True:
    q, peer = s.recvfrom(4096)
    if len(q) < 12:
        continue
    if b"servfail" in q[12:].lower():
        # same id, QR=1, opcode and RD copied, RA=1, rcode 2; the question echoed
        flags = 0x8000 | (q[2] << 8 & 0x7900) | 0x0080 | 2
        s.sendto(q[:2] + flags.to_bytes(2, "big") + q[4:6] + b"\0\0\0\0\0\0" + q[12:], peer)
