#!/usr/bin/python3
"""Writes the seed corpus of fuzz_h2_client (tests/fuzz/corpus/h2_client/): server byte streams
made with python3-h2 answering the target's four requests (stream 1 GET, 3 HEAD, 5 POST with a
body and trailers, 7 GET cancelled on its head), each behind one byte that picks the read size
(0xff: large pieces)."""
import os

import h2.config
import h2.connection
import h2.settings

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "h2_client")


def server():
    """A server that has read the target's requests (so it may answer streams 1-7)."""
    cli = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    cli.initiate_connection()
    for sid, method in ((1, "GET"), (3, "HEAD"), (5, "POST"), (7, "GET")):
        cli.send_headers(sid, [(":method", method), (":scheme", "https"),
                               (":authority", "example.com"), (":path", "/")],
                         end_stream=method != "POST")
    cli.send_data(5, b"hello")
    cli.send_headers(5, [("x-ab", "1")], end_stream=True)
    s = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False,
                                                             validate_inbound_headers=False))
    s.initiate_connection()
    s.receive_data(cli.data_to_send())
    s.data_to_send()
    s.initiate_connection()
    return s


def seeds():
    s = server()
    for sid in (1, 3, 5, 7):
        s.send_headers(sid, [(":status", "200"), ("content-length", "5")],
                       end_stream=sid == 3)
        if sid != 3:
            s.send_data(sid, b"hello", end_stream=True)
    yield "all_length", s.data_to_send()

    s = server()
    s.send_headers(1, [(":status", "103"), ("link", "</a>")])
    s.send_headers(1, [(":status", "200"), ("content-type", "text/plain")])
    s.send_data(1, b"x" * 3000)
    s.send_headers(1, [("grpc-status", "0"), ("grpc-message", "ok")], end_stream=True)
    s.send_headers(5, [(":status", "204")], end_stream=True)
    yield "unknown_length_trailers", s.data_to_send()

    s = server()
    s.send_headers(1, [(":status", "200")])
    s.send_data(1, b"partial")
    s.reset_stream(1, 2)
    s.reset_stream(3, 7)
    s.send_headers(5, [(":status", "200")], end_stream=True)
    s.ping(b"12345678")
    s.close_connection(last_stream_id=3)
    yield "resets_goaway", s.data_to_send()

    s = server()
    s.update_settings({h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: 1,
                       h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 1})
    s.increment_flow_control_window(1000, stream_id=5)
    s.send_headers(7, [(":status", "200"), ("content-length", "1")])
    yield "settings_window", s.data_to_send()


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, data in seeds():
        for tag, size_byte in (("small", b"\x01"), ("big", b"\xff")):
            with open(os.path.join(OUT, "%s_%s" % (name, tag)), "wb") as f:
                f.write(size_byte + data)


if __name__ == "__main__":
    main()
