#!/usr/bin/python3
"""Opens N HTTP/2 connections over TLS to a proxy, one GET each, keeps them idle (h2_bench.sh:
memory per idle h2 connection). Driven through stdin/stdout, one stage at a time:

  h2_idle_conns.py ADDR PORT SNI CAFILE PATH N
  prints "idle N OK"   every connection got its whole answer (OK of them a 200) and is kept
                       open; waits for a line on stdin
  closes everything, prints "closed", exits.

Frames come from tests/integration/h2_raw.py.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import h2_raw  # noqa: E402


def main():
    addr, port, sni, cafile, path, n = sys.argv[1:7]
    conns, ok = [], 0
    for _ in range(int(n)):
        c = h2_raw.Conn(addr, int(port), sni, cafile, conn_window=65535)
        c.get(1, sni, path)
        c.wait([1], 20)
        ok += 1 if c.streams[1].status == 200 and c.streams[1].ended else 0
        conns.append(c)
    print("idle %d %d" % (len(conns), ok), flush=True)
    sys.stdin.readline()
    for c in conns:
        c.s.close()
    print("closed", flush=True)


if __name__ == "__main__":
    main()
