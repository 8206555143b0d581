#!/usr/bin/python3
"""Writes the seed corpus of fuzz_h2_server (tests/fuzz/corpus/h2_server/): client byte streams
made with python3-h2, without the connection preface (the target sends it first), each behind
one byte that picks the read size (0xff: large pieces)."""
import os
import sys

import h2.config
import h2.connection
import h2.settings

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "h2_server")
MAGIC = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def client():
    c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    c.initiate_connection()
    return c


def req(c, sid, method="GET", path="/", extra=(), end=True):
    c.send_headers(sid, [(":method", method), (":scheme", "https"),
                         (":authority", "example.com"), (":path", path)] + list(extra),
                   end_stream=end)


def seeds():
    c = client()
    req(c, 1, extra=[("user-agent", "seed"), ("cookie", "a=1"), ("cookie", "b=2")])
    yield "get", c.data_to_send()

    c = client()
    req(c, 1, "POST", "/up", [("content-length", "11"), ("te", "trailers")], end=False)
    c.send_data(1, b"hello ")
    c.send_data(1, b"world")
    c.send_headers(1, [("grpc-status", "0")], end_stream=True)
    yield "post_trailers", c.data_to_send()

    c = client()
    for sid in (1, 3, 5, 7, 9):
        req(c, sid, path="/s%d" % sid)
    c.reset_stream(3)
    c.ping(b"12345678")
    yield "streams_reset_ping", c.data_to_send()

    c = client()
    c.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 100})
    req(c, 1, "PUT", "/big", [("host", "example.com")], end=False)
    c.send_data(1, b"x" * 5000, end_stream=True)
    c.increment_flow_control_window(1000)
    yield "put_window", c.data_to_send()

    c = client()
    req(c, 1, "CONNECT", "/chat", [(":protocol", "websocket")], end=False)
    yield "ext_connect", c.data_to_send()


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, data in seeds():
        assert data.startswith(MAGIC)
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(b"\xff" + data[len(MAGIC):])
    return 0


if __name__ == "__main__":
    sys.exit(main())
