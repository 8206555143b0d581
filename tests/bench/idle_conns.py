#!/usr/bin/env python3
"""Opens N TLS connections to a proxy, sends one keep-alive GET on each, keeps them idle.

Used by http_bench.sh to measure the resident memory a proxy spends per idle intercepted
connection. The caller drives it through stdin/stdout, one stage at a time, so it can read
the proxy's VmRSS between stages:

  prints "handshaken N"  all N connections completed the TLS handshake (no request yet);
                         waits for a line on stdin
  prints "idle N"        every connection got a complete 200 response to one GET and is
                         idle (kept open); waits for a line on stdin
  closes everything, prints "closed", exits.

--mode seq: the requests go one after the other (each finishes before the next starts), so
  a proxy that pools upstream connections needs only one upstream leg;
--mode burst: all requests are written at once, so the proxy has N requests in flight and
  opens many upstream legs (what it keeps afterwards is its pooling policy).

Certificates are not verified (like wrk). Everything is bounded by --timeout seconds.
"""
import argparse
import asyncio
import ssl
import sys


async def read_response(reader):
    head = await reader.readuntil(b"\r\n\r\n")
    status = head.split(b" ", 2)[1]
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    if length:
        await reader.readexactly(length)
    return status


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", required=True, help="address to connect to")
    ap.add_argument("--port", type=int, default=443)
    ap.add_argument("--sni", required=True, help="SNI and Host header")
    ap.add_argument("--path", default="/1k.bin")
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--mode", choices=["seq", "burst"], default="seq")
    ap.add_argument("--parallel", type=int, default=32, help="handshakes at once")
    ap.add_argument("--timeout", type=float, default=300)
    a = ap.parse_args()

    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.set_alpn_protocols(["http/1.1"])
    loop = asyncio.get_running_loop()
    sem = asyncio.Semaphore(a.parallel)

    async def opener():
        async with sem:
            return await asyncio.open_connection(a.host, a.port, ssl=ctx, server_hostname=a.sni)

    async def stdin_line():
        return await asyncio.wait_for(loop.run_in_executor(None, sys.stdin.readline), a.timeout)

    conns = []
    try:
        conns = await asyncio.wait_for(asyncio.gather(*[opener() for _ in range(a.count)]),
                                       a.timeout)
        print("handshaken", len(conns), flush=True)
        await stdin_line()
        req = ("GET %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (a.path, a.sni)).encode()

        async def one(rw):
            rw[1].write(req)
            await rw[1].drain()
            return await read_response(rw[0])

        if a.mode == "seq":
            statuses = []
            for rw in conns:
                statuses.append(await asyncio.wait_for(one(rw), a.timeout))
        else:
            statuses = await asyncio.wait_for(asyncio.gather(*[one(rw) for rw in conns]),
                                              a.timeout)
        ok = sum(1 for s in statuses if s == b"200")
        other = {}
        for s in statuses:
            if s != b"200":
                other[s.decode()] = other.get(s.decode(), 0) + 1
        print("idle", ok, " ".join("%s:%d" % kv for kv in sorted(other.items())), flush=True)
        await stdin_line()
    finally:
        for _, w in conns:
            w.close()
        await asyncio.sleep(0.2)
        print("closed", flush=True)


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except Exception as e:  # report and fail; the caller prints it
        print("error", type(e).__name__, e, flush=True)
        sys.exit(1)
