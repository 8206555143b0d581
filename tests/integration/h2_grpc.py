#!/usr/bin/python3
"""gRPC peers for test_h2_grpc.sh, with python3-grpcio and no protoc: generic handlers and
byte (identity) serializers, service airlock.Test.

  h2_grpc.py server ADDR PORT CERT KEY REAL SURROGATE
      TLS (h2) server. Methods: Unary (echo), ServerStream (the request is a count n: n
      messages), ClientStream (the messages joined by ','), Bidi (each message echoed),
      Abort (fails with FAILED_PRECONDITION, details and trailing metadata), Cred (what the
      'authorization' metadata held: "real", "surrogate" or "other"; never the value itself),
      Hold (bidi: each message echoed with the seconds since the call began).
  h2_grpc.py client CAFILE TARGET CASE [ARGS]
      TARGET is host:port (a *.test name resolved as the agent would). Prints one line.
"""
import sys
import time
from concurrent import futures

import grpc

IDENT = (lambda b: b, lambda b: b)


def server(addr, port, cert, key, real, surrogate):
    def unary(req, ctx):
        return b"unary:" + req

    def server_stream(req, ctx):
        for i in range(int(req)):
            yield b"msg%d" % i

    def client_stream(it, ctx):
        return b",".join(it)

    def bidi(it, ctx):
        for m in it:
            yield b"echo:" + m

    def abort(req, ctx):
        ctx.set_trailing_metadata((("x-why", "the test asked"),))
        ctx.abort(grpc.StatusCode.FAILED_PRECONDITION, "aborted on purpose: " + req.decode())

    def cred(req, ctx):
        md = dict(ctx.invocation_metadata())
        v = md.get("authorization", "")
        got = "real" if v == "Bearer " + real else "surrogate" if v == "Bearer " + surrogate else "other"
        print("cred %s" % got, flush=True)
        return got.encode()

    def hold(it, ctx):
        t0 = time.time()
        for m in it:
            yield b"%s@%d" % (m, int(time.time() - t0))

    rpc = grpc.unary_unary_rpc_method_handler
    handlers = {
        "Unary": rpc(unary, *IDENT),
        "ServerStream": grpc.unary_stream_rpc_method_handler(server_stream, *IDENT),
        "ClientStream": grpc.stream_unary_rpc_method_handler(client_stream, *IDENT),
        "Bidi": grpc.stream_stream_rpc_method_handler(bidi, *IDENT),
        "Abort": rpc(abort, *IDENT),
        "Cred": rpc(cred, *IDENT),
        "Hold": grpc.stream_stream_rpc_method_handler(hold, *IDENT),
    }
    s = grpc.server(futures.ThreadPoolExecutor(max_workers=16))
    s.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("airlock.Test", handlers),))
    creds = grpc.ssl_server_credentials(((open(key, "rb").read(), open(cert, "rb").read()),))
    s.add_secure_port("%s:%s" % (addr, port), creds)
    s.start()
    print("listening", flush=True)
    s.wait_for_termination()


def client(cafile, target, case, args):
    creds = grpc.ssl_channel_credentials(root_certificates=open(cafile, "rb").read())
    ch = grpc.secure_channel(target, creds)
    m = lambda kind, name: getattr(ch, kind)("/airlock.Test/" + name, *IDENT)
    svc = args[0] if case == "blocked" else "airlock.Test"
    try:
        if case == "unary":
            print(m("unary_unary", "Unary")(b"hello", timeout=10).decode())
        elif case == "server-stream":
            out = list(m("unary_stream", "ServerStream")(b"5", timeout=10))
            print(" ".join(x.decode() for x in out))
        elif case == "client-stream":
            print(m("stream_unary", "ClientStream")(iter([b"a", b"b", b"c"]), timeout=10).decode())
        elif case == "bidi":
            out = m("stream_stream", "Bidi")(iter([b"1", b"2", b"3"]), timeout=10)
            print(" ".join(x.decode() for x in out))
        elif case == "abort":
            try:
                m("unary_unary", "Abort")(b"x", timeout=10)
                print("no error")
            except grpc.RpcError as e:
                tm = dict(e.trailing_metadata() or ())
                print("code=%s details=%s x-why=%s" % (e.code().name, e.details(), tm.get("x-why")))
        elif case == "cred":
            md = (("authorization", "Bearer " + args[0]),)
            print(m("unary_unary", "Cred")(b"", metadata=md, timeout=10).decode())
        elif case == "hold":
            secs, every = float(args[0]), float(args[1])

            def ticks():
                t0 = time.time()
                i = 0
                while time.time() - t0 < secs:
                    yield b"t%d" % i
                    i += 1
                    time.sleep(every)
                yield b"last"

            out = [x.decode() for x in m("stream_stream", "Hold")(ticks(), timeout=secs + 30)]
            print("replies=%d last=%s" % (len(out), out[-1] if out else "-"))
        elif case == "blocked":
            try:
                ch.unary_unary("/%s/Unary" % svc, *IDENT)(b"x", timeout=10)
                print("no error")
            except grpc.RpcError as e:
                print("code=%s details=%s" % (e.code().name, e.details()))
        else:
            print("unknown case " + case)
            sys.exit(2)
    except grpc.RpcError as e:
        print("rpc error code=%s details=%s" % (e.code().name, e.details()))
        sys.exit(1)


if __name__ == "__main__":
    if sys.argv[1] == "server":
        server(*sys.argv[2:8])
    else:
        client(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:])
