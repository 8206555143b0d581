#!/usr/bin/python3
"""Writes the seed corpus of fuzz_h2_trailers (tests/fuzz/corpus/h2_trailers/): a mode byte
(fuzz_h2_trailers.c says what each bit does) and trailer fields as
[name length: 1 byte][name][value length: 2 bytes LE][value], or an HPACK block (raw mode)."""
import base64
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "h2_trailers")
SECRET = b"ghp_FUZZSECRET0123"
CANARY = b"canary-fuzz-77ab"


def fields(mode, pairs):
    b = bytes([mode])
    for n, v in pairs:
        b += bytes([len(n)]) + n + struct.pack("<H", len(v)) + v
    return b


SEEDS = {
    "grpc": fields(0, [(b"grpc-status", b"0"), (b"grpc-message", b"ok")]),
    "secret_value": fields(0, [(b"x-sum", b"sha=" + SECRET)]),
    "canary_name_hex_split": fields(2, [(b"x-ok", b"1"), (b"x-" + CANARY.hex().encode(), b"1")]),
    "cl0": fields(4, [(b"x-a", b"b")]),
    "bytewise_b64": fields(8, [(b"x-sum", base64.b64encode(b"::" + SECRET))]),
    "data_after": fields(16, [(b"x-a", b"b")]),
    "over_count": fields(0, [(b"x-%d" % i, b"v") for i in range(40)]),
    "over_bytes": fields(0, [(b"x-big", b"a" * 17000)]),
    "uppercase_name": fields(0, [(b"X-Sum", b"1")]),
    "pseudo_in_trailers": fields(0, [(b":path", b"/x")]),
    "connection_field": fields(2, [(b"connection", b"close")]),
    "empty": fields(0, []),
    # "x-a: b" put in the dynamic table, then indexed from it (62): two fields
    "raw_indexed": bytes([1, 0x40, 0x03]) + b"x-a" + b"\x01b" + bytes([0xBE]),
}


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
