#!/usr/bin/python3
"""AWS-signing test client for test_aws.sh (Debian's python3-botocore and python3-awscrt).

usage: aws_client.py MODE --url URL --akid ID --secret S [--token T] [options]
MODE:
  botocore  sign with botocore (S3SigV4Auth for service s3, else SigV4Auth) and send
  presign   print a botocore presigned URL (S3SigV4QueryAuth / SigV4QueryAuth)
  crt       sign with awscrt.auth.aws_sign_request (--alg v4|v4a), send; --presign prints the
            presigned URL instead
  chunked   an aws-chunked upload (--alg v4|v4a, --trailer): the head is signed by botocore
            (v4) or awscrt (v4a) with the STREAMING-... payload value, then every chunk and the
            trailer are signed here (HMAC-SHA256 over botocore's signing key chain; ECDSA by
            aws-c-cal through aws_crt.py, '*'-padded to 144 as aws-c-auth does)
Sending: TLS to the URL's host through the system resolver (airlock), or to --connect IP with
the same SNI/Host (straight to the upstream); with --direct-ca the same request is sent again
straight to --direct-ip (aws-chunked bodies are framed again: SigV4A chunk signatures are
randomized). Prints one JSON line: status, the X-Verify answer header, the answer body, the
sha256 of the payload sent, and "direct" with the second answer.
"""
import argparse
import base64
import datetime
import hashlib
import hmac
import http.client
import io
import json
import os
import socket
import ssl
import sys
import zlib
from urllib.parse import urlsplit

import botocore.auth
from botocore.auth import S3SigV4Auth, S3SigV4QueryAuth, SigV4Auth, SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import aws_crt  # noqa: E402

EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()


def payload_bytes(n):
    """n deterministic, non-repeating-looking bytes, in 64 KiB pieces."""
    block = b"".join(hashlib.sha256(b"airlock %d" % i).digest() for i in range(2048))
    while n > 0:
        yield block[:min(n, len(block))]
        n -= len(block)


def shift_clock(seconds):
    """botocore takes the time from datetime.datetime.utcnow(): move it by seconds."""
    if not seconds:
        return
    real = datetime.datetime
    td = datetime.timedelta

    class Shifted(real):
        @classmethod
        def utcnow(cls):
            return real.utcnow() + td(seconds=seconds)

    class Mod:
        datetime = Shifted
        timedelta = td

    botocore.auth.datetime = Mod


def send(connect, ca, method, url, headers, body_pieces):
    u = urlsplit(url)
    ctx = ssl.create_default_context(cafile=ca)
    conn = http.client.HTTPSConnection(u.hostname, u.port or 443, context=ctx, timeout=120)
    sock = socket.create_connection((connect or u.hostname, u.port or 443), timeout=120)
    conn.sock = ctx.wrap_socket(sock, server_hostname=u.hostname)
    target = (u.path or "/") + ("?" + u.query if u.query else "")
    conn.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
    for k, v in headers:
        conn.putheader(k, v)
    conn.endheaders()
    for piece in body_pieces:
        conn.send(piece)
    r = conn.getresponse()
    data = r.read()
    try:
        body = json.loads(data)
    except ValueError:
        body = data.decode(errors="replace")
    return {"status": r.status, "verify": r.getheader("X-Verify"), "body": body}


def send_h2(connect, ca, method, url, headers, body_pieces):
    """The same request over HTTP/2 (python3-h2): ALPN h2 only, the body as DATA frames within
    the stream's and the connection's windows."""
    import h2.config
    import h2.connection
    import h2.events
    u = urlsplit(url)
    ctx = ssl.create_default_context(cafile=ca)
    ctx.set_alpn_protocols(["h2"])
    sock = ctx.wrap_socket(socket.create_connection((connect or u.hostname, u.port or 443),
                                                    timeout=120), server_hostname=u.hostname)
    if sock.selected_alpn_protocol() != "h2":
        raise OSError("the server did not pick h2")
    c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    c.initiate_connection()
    sock.sendall(c.data_to_send())
    target = (u.path or "/") + ("?" + u.query if u.query else "")
    drop = ("host", "connection", "transfer-encoding", "keep-alive")
    hdrs = [(":method", method), (":scheme", "https"), (":authority", u.netloc),
            (":path", target)] + [(k.lower(), v) for k, v in headers if k.lower() not in drop]
    sid = c.get_next_available_stream_id()
    c.send_headers(sid, hdrs)
    sock.sendall(c.data_to_send())
    status, verify, data, ended = 0, None, b"", False

    def pump():
        nonlocal status, verify, data, ended
        for e in c.receive_data(sock.recv(65536) or b""):
            if isinstance(e, h2.events.ResponseReceived):
                hd = dict(e.headers)
                status = int(hd[b":status"])
                verify = hd.get(b"x-verify", b"").decode() or None
            elif isinstance(e, h2.events.DataReceived):
                data += e.data
                c.acknowledge_received_data(e.flow_controlled_length, sid)
            elif isinstance(e, (h2.events.StreamEnded, h2.events.StreamReset)):
                ended = True
        sock.sendall(c.data_to_send())

    for piece in body_pieces:
        piece = memoryview(bytes(piece))
        while len(piece) > 0 and not ended:
            room = min(c.local_flow_control_window(sid), c.max_outbound_frame_size)
            if room <= 0:
                pump()
                continue
            c.send_data(sid, piece[:room].tobytes())
            piece = piece[room:]
            sock.sendall(c.data_to_send())
    if not ended:
        c.end_stream(sid)
        sock.sendall(c.data_to_send())
    while not ended:
        pump()
    sock.close()
    try:
        body = json.loads(data)
    except ValueError:
        body = data.decode(errors="replace")
    return {"status": status, "verify": verify, "body": body, "http": 2}


def send_all(a, method, url, headers, make_body):
    """Sends the request as configured; with --direct-ca, sends the same request again straight
    to --direct-ip (the upstream), and adds that answer as "direct"."""
    try:
        out = (send_h2 if a.h2 else send)(a.connect, a.ca, method, url, headers, make_body())
    except (OSError, http.client.HTTPException) as e:
        return {"status": 0, "verify": None, "error": type(e).__name__}
    if a.direct_ca:
        out["direct"] = send(a.direct_ip, a.direct_ca, method, url, headers, make_body())
    return out


def creds(a):
    return Credentials(a.akid, a.secret, a.token)


def body_of(a):
    if a.body is not None:
        return a.body.encode()
    return b"".join(payload_bytes(a.body_size)) if a.body_size else b""


def mode_botocore(a):
    shift_clock(a.date_offset)
    body = body_of(a)
    u = urlsplit(a.url)
    req = AWSRequest(method=a.method, url=a.url, data=body)
    req.headers["Host"] = u.netloc
    for h in a.header:
        k, _, v = h.partition(":")
        req.headers[k.strip()] = v.strip()
    signer = (S3SigV4Auth if a.service == "s3" else SigV4Auth)(creds(a), a.service, a.region)
    signer.add_auth(req)
    headers = list(req.headers.items())
    if body or a.method in ("PUT", "POST"):
        headers.append(("Content-Length", str(len(body))))  # as botocore's prepare() adds it
    headers.append(("User-Agent", "airlock-test botocore"))
    out = send_all(a, a.method, req.url, headers, lambda: [body] if body else [])
    out["sent_sha256"] = hashlib.sha256(body).hexdigest()
    return out


def mode_presign(a):
    shift_clock(a.date_offset)
    req = AWSRequest(method=a.method, url=a.url)
    cls = S3SigV4QueryAuth if a.service == "s3" else SigV4QueryAuth
    cls(creds(a), a.service, a.region, expires=a.expires).add_auth(req)
    print(req.url)
    return None


def crt_config(a, signature_type, body_value, header_type):
    from awscrt import auth as ca
    s3 = a.service == "s3"
    prov = ca.AwsCredentialsProvider.new_static(a.akid, a.secret, a.token)
    date = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=a.date_offset)
    return ca.AwsSigningConfig(
        ca.AwsSigningAlgorithm.V4_ASYMMETRIC if a.alg == "v4a" else ca.AwsSigningAlgorithm.V4,
        signature_type, prov, a.region, a.service, date=date,
        use_double_uri_encode=not s3, should_normalize_uri_path=not s3,
        signed_body_value=body_value, signed_body_header_type=header_type,
        expiration_in_seconds=a.expires if signature_type == ca.AwsSignatureType.
        HTTP_REQUEST_QUERY_PARAMS else None)


def mode_crt(a):
    from awscrt import auth as ca
    from awscrt import http as chttp
    body = body_of(a)
    u = urlsplit(a.url)
    target = (u.path or "/") + ("?" + u.query if u.query else "")
    hdrs = [("Host", u.netloc)] + [tuple(x.strip() for x in h.split(":", 1)) for h in a.header]
    if body:
        hdrs.append(("Content-Length", str(len(body))))
    req = chttp.HttpRequest(a.method, target, chttp.HttpHeaders(hdrs), io.BytesIO(body))
    s3 = a.service == "s3"
    if a.presign:
        cfg = crt_config(a, ca.AwsSignatureType.HTTP_REQUEST_QUERY_PARAMS,
                         "UNSIGNED-PAYLOAD" if s3 else None, ca.AwsSignedBodyHeaderType.NONE)
        ca.aws_sign_request(req, cfg).result(10)
        print("https://%s%s" % (u.netloc, req.path))
        return None
    cfg = crt_config(a, ca.AwsSignatureType.HTTP_REQUEST_HEADERS,
                     hashlib.sha256(body).hexdigest() if s3 else None,
                     ca.AwsSignedBodyHeaderType.X_AMZ_CONTENT_SHA_256 if s3
                     else ca.AwsSignedBodyHeaderType.NONE)
    ca.aws_sign_request(req, cfg).result(10)
    out = send_all(a, a.method, "https://%s%s" % (u.netloc, req.path), list(req.headers),
                   lambda: [body] if body else [])
    out["sent_sha256"] = hashlib.sha256(body).hexdigest()
    return out


def auth_parts(value):
    cred = value.split("Credential=", 1)[1].split(",", 1)[0]
    sig = value.split("Signature=", 1)[1].strip()
    return cred.split("/", 1)[1], sig


def mode_chunked(a):
    v4a = a.alg == "v4a"
    label = "AWS4-ECDSA-P256-SHA256" if v4a else "AWS4-HMAC-SHA256"
    streaming = "STREAMING-%s-PAYLOAD%s" % (label, "-TRAILER" if a.trailer else "")
    size, cs = a.body_size, a.chunk_size
    siglen = 144 if v4a else 64
    nfull, rest = divmod(size, cs)
    sizes = [cs] * nfull + ([rest] if rest else [])
    enc = sum(len("%x" % n) + 17 + siglen + 2 + n + 2 for n in sizes)
    enc += 1 + 17 + siglen + 2
    if a.trailer:
        enc += len("x-amz-checksum-crc32:") + 8 + 2 + len("x-amz-trailer-signature:") + siglen + 4
    else:
        enc += 2
    u = urlsplit(a.url)
    hdrs = [("Host", u.netloc), ("Content-Encoding", "aws-chunked"),
            ("Content-Length", str(enc)), ("x-amz-decoded-content-length", str(size))]
    if a.trailer:
        hdrs.append(("x-amz-trailer", "x-amz-checksum-crc32"))
    if v4a:
        from awscrt import auth as ca
        from awscrt import http as chttp
        req = chttp.HttpRequest(a.method, u.path, chttp.HttpHeaders(hdrs))
        cfg = crt_config(a, ca.AwsSignatureType.HTTP_REQUEST_HEADERS, streaming,
                         ca.AwsSignedBodyHeaderType.X_AMZ_CONTENT_SHA_256)
        ca.aws_sign_request(req, cfg).result(10)
        headers = list(req.headers)
        ecc = aws_crt.EccKey(a.akid, a.secret)

        def sign(sts):
            return ecc.sign_sts(sts).ljust(144, "*")
    else:
        shift_clock(a.date_offset)

        class Streaming(S3SigV4Auth):
            def payload(self, request):
                return streaming

        req = AWSRequest(method=a.method, url=a.url)
        for k, v in hdrs:
            req.headers[k] = v
        signer = Streaming(creds(a), a.service, a.region)
        signer.add_auth(req)
        headers = list(req.headers.items())
        key = signer._sign(("AWS4" + a.secret).encode(), req.context["timestamp"][:8])
        for step in (a.region, a.service, "aws4_request"):
            key = signer._sign(key, step)

        def sign(sts):
            return hmac.new(key, sts.encode(), hashlib.sha256).hexdigest()
    hd = {k.lower(): v for k, v in headers}
    scope, seed = auth_parts(hd["authorization"])
    amz = hd["x-amz-date"]
    state = {}

    def bad(sig, index):
        # --corrupt-chunk: a wrong signature on chunk index (0-based; -1: the trailer)
        if a.corrupt_chunk != index:
            return sig
        return ("0" if sig[0] != "0" else "1") + sig[1:]

    def frame(data):
        sts = "\n".join([label + "-PAYLOAD", amz, scope, state["prev"], EMPTY_SHA256,
                         hashlib.sha256(data).hexdigest()])
        sig = bad(sign(sts), state["n"])
        size = b"%x" % len(data)
        if a.corrupt_frame == state["n"]:
            size = b"z" * len(size)  # --corrupt-frame: not a chunk size
        state["n"] += 1
        state["prev"] = sig.rstrip("*")
        return size + b";chunk-signature=%s\r\n" % sig.encode() + data + b"\r\n"

    def pieces():
        state.update(prev=seed, crc=0, sent=0, n=0, sha=hashlib.sha256())
        buf = bytearray()
        for d in payload_bytes(size):
            state["sha"].update(d)
            state["crc"] = zlib.crc32(d, state["crc"])
            buf += d
            while len(buf) >= cs:
                out = frame(bytes(buf[:cs]))
                del buf[:cs]
                state["sent"] += len(out)
                yield out
        if buf:
            out = frame(bytes(buf))
            state["sent"] += len(out)
            yield out
        last = frame(b"")
        if a.trailer:
            last = last[:-2]  # the trailers follow the final chunk's header line
            crc = base64.b64encode(state["crc"].to_bytes(4, "big")).decode()
            canon = "x-amz-checksum-crc32:%s\n" % crc
            sts = "\n".join([label + "-TRAILER", amz, scope, state["prev"],
                             hashlib.sha256(canon.encode()).hexdigest()])
            last += ("x-amz-checksum-crc32:%s\r\nx-amz-trailer-signature:%s\r\n\r\n"
                     % (crc, bad(sign(sts), -1))).encode()
        state["sent"] += len(last)
        yield last

    out = send_all(a, a.method, a.url, headers + [("User-Agent", "airlock-test chunked")],
                   pieces)
    if out["status"] and state["sent"] != enc:
        raise SystemExit("encoded length %d != Content-Length %d" % (state["sent"], enc))
    out["sent_sha256"] = state["sha"].hexdigest()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["botocore", "presign", "crt", "chunked"])
    ap.add_argument("--url", required=True)
    ap.add_argument("--method", default="GET")
    ap.add_argument("--akid", required=True)
    ap.add_argument("--secret", required=True)
    ap.add_argument("--token")
    ap.add_argument("--service", default="s3")
    ap.add_argument("--region", default="us-west-2", help="V4 region, or the V4A region set")
    ap.add_argument("--alg", default="v4", choices=["v4", "v4a"])
    ap.add_argument("--body")
    ap.add_argument("--body-size", type=int, default=0)
    ap.add_argument("--chunk-size", type=int, default=64 * 1024)
    ap.add_argument("--trailer", action="store_true")
    ap.add_argument("--header", action="append", default=[], help="extra signed header k:v")
    ap.add_argument("--date-offset", type=int, default=0, help="clock shift in seconds")
    ap.add_argument("--expires", type=int, default=300)
    ap.add_argument("--presign", action="store_true")
    ap.add_argument("--corrupt-chunk", type=int, default=None)
    ap.add_argument("--corrupt-frame", type=int, default=None)
    ap.add_argument("--connect", help="connect to this IP instead of resolving the host")
    ap.add_argument("--ca", default=os.environ.get("AWS_CA_BUNDLE"))
    ap.add_argument("--direct-ca", help="also send the same request straight to --direct-ip")
    ap.add_argument("--direct-ip", default="127.0.0.3")
    ap.add_argument("--h2", action="store_true", help="send over HTTP/2 (ALPN h2)")
    a = ap.parse_args()
    out = {"botocore": mode_botocore, "presign": mode_presign, "crt": mode_crt,
           "chunked": mode_chunked}[a.mode](a)
    if out is not None:
        print(json.dumps(out))


if __name__ == "__main__":
    main()
