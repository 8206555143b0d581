#!/usr/bin/python3
"""An HTTPS upstream that checks AWS signatures with the REAL credentials, using code nobody in
this project wrote, and is S3-like enough for `aws s3 cp` (PutObject, multipart upload).

usage: aws_verifier.py --listen 127.0.0.3:443 --cert C --key K --creds creds.json
                       [--log requests.jsonl] [--store DIR]
creds.json: {"<real access key id>": {"secret": "...", "token": "..." | null}, ...}

Who computes what:
  SigV4 header form  botocore.auth.SigV4Auth / S3SigV4Auth: canonical request, string to sign
                     and signature, over the received method, target and the headers named by
                     the received SignedHeaders (headers_to_sign is pinned to exactly those),
                     with the received X-Amz-Date as botocore's timestamp.
  SigV4 presigned    botocore.auth.SigV4QueryAuth / S3SigV4QueryAuth the same way, over the
                     received query without X-Amz-Signature.
  SigV4A             canonical request by botocore as above; the string to sign is the four
                     SigV4A lines (algorithm, date, region-less scope, SHA-256 of that canonical
                     request); the key pair is derived by aws-c-auth and the ECDSA check is
                     aws-c-cal's, both inside python3-awscrt (aws_crt.py). The start-up self
                     test signs requests with awscrt.auth.aws_sign_request (V4 and V4A, header
                     and query) and requires this verifier to accept them and reject tampered
                     copies, so botocore's and aws-c-auth's canonical forms are checked against
                     each other.
  aws-chunked        awscrt 0.16 cannot sign chunks from Python, so the chunk and trailer chains
                     (S3 "sigv4-streaming" and "sigv4-streaming-trailers" pages) are recomputed
                     here: HMAC-SHA256 with Python's hmac over botocore's signing-key chain
                     (SigV4Auth._sign) for SigV4; for SigV4A each chunk/trailer string to sign is
                     verified with aws-c-cal ECDSA (aws_crt.EccKey.verify_sts).
Bodies are streamed (hashed as they arrive); multipart parts go to --store files, so a 50 MB
upload never sits in memory. Answers: 200 (X-Verify: ok; JSON, or S3-shaped XML/empty bodies
for S3 writes) or 403 with X-Verify: <reason> and {"error": ..., "reason": ..., "akid": ...}.
"""
import argparse
import base64
import datetime
import hashlib
import hmac
import json
import os
import re
import ssl
import sys
import threading
import uuid
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, unquote, urlsplit

from botocore.auth import S3SigV4Auth, S3SigV4QueryAuth, SigV4Auth, SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.compat import HTTPHeaders
from botocore.credentials import Credentials

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import aws_crt  # noqa: E402

EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
V4 = "AWS4-HMAC-SHA256"
V4A = "AWS4-ECDSA-P256-SHA256"
MAX_SKEW = 15 * 60  # what AWS allows
S3_SERVICES = ("s3", "s3-object-lambda", "s3-outposts", "s3express")
AUTH_RE = re.compile(r"^(AWS4-HMAC-SHA256|AWS4-ECDSA-P256-SHA256) +Credential=([^/,]+)/([^,]+), *"
                     r"SignedHeaders=([^,]+), *Signature=([0-9a-f]+)$")
CHUNK_RE = re.compile(rb"^([0-9a-fA-F]{1,16})(?:;chunk-signature=([0-9a-f*]{1,256}))?\r\n$")


class Reject(Exception):
    def __init__(self, code, reason, status=403):
        super().__init__(reason)
        self.code = code
        self.reason = reason
        self.status = status


class Received:
    """The parts of one received request the checks look at."""

    def __init__(self, method, target, headers):
        self.method = method
        self.target = target
        self.headers = headers  # [(name, value)] in wire order

    def get(self, name):
        for k, v in self.headers:
            if k.lower() == name:
                return v
        return None

    def all(self, name):
        return [v for k, v in self.headers if k.lower() == name]


class Auth:
    """The authentication of a request as received."""

    def __init__(self, rx):
        self.presigned = False
        path, _, query = rx.target.partition("?")
        a = rx.all("authorization")
        if a:
            if len(a) != 1:
                raise Reject("InvalidRequest", "more than one Authorization header")
            m = AUTH_RE.match(a[0])
            if not m:
                raise Reject("IncompleteSignature", "Authorization is not AWS SigV4/SigV4A")
            self.alg, self.akid, self.scope, self.signed, self.signature = m.groups()
            self.amz_date = rx.get("x-amz-date")
            self.token = rx.all("x-amz-security-token")
            self.token_signed = "x-amz-security-token" in self.signed.split(";")
            self.region_set = rx.get("x-amz-region-set")
            return
        params = [(unquote(k), unquote(v)) for k, _, v in
                  (p.partition("=") for p in query.split("&") if p)]
        q = {}
        for k, v in params:
            if k.startswith("X-Amz-") and k in q:
                raise Reject("InvalidRequest", "repeated " + k)
            q[k] = v
        if "X-Amz-Credential" not in q:
            raise Reject("AccessDenied", "no AWS authentication")
        self.presigned = True
        self.alg = q.get("X-Amz-Algorithm", "")
        self.akid, _, self.scope = q["X-Amz-Credential"].partition("/")
        self.signed = q.get("X-Amz-SignedHeaders", "")
        self.signature = q.get("X-Amz-Signature", "")
        self.amz_date = q.get("X-Amz-Date")
        self.expires = q.get("X-Amz-Expires", "")
        self.region_set = q.get("X-Amz-Region-Set")
        self.token = [q["X-Amz-Security-Token"]] if "X-Amz-Security-Token" in q else []
        # aws-c-auth's omit_session_token appends the token after the signature, unsigned
        keys = [k for k, _ in params]
        self.token_signed = bool(self.token) and (
            "X-Amz-Signature" not in keys or
            keys.index("X-Amz-Security-Token") < keys.index("X-Amz-Signature"))
        if self.alg not in (V4, V4A) or not re.fullmatch(r"[0-9a-f]+", self.signature or "x"):
            raise Reject("AuthorizationQueryParametersError", "bad presigned parameters")
        parts = [p for p in query.split("&") if p]
        drop = {"X-Amz-Signature"} | (set() if self.token_signed else {"X-Amz-Security-Token"})
        self.signed_query = "&".join(p for p in parts if unquote(p.partition("=")[0]) not in drop)
        self.path = path

    def scope_parts(self):
        p = self.scope.split("/")
        if self.alg == V4 and len(p) == 4 and p[3] == "aws4_request":
            return p[0], p[1], p[2]
        if self.alg == V4A and len(p) == 3 and p[2] == "aws4_request":
            return p[0], "", p[1]
        raise Reject("AuthorizationHeaderMalformed", "bad credential scope " + self.scope)


def _signer(auth, creds, service, region, signed_map, body_hash):
    s3 = service in S3_SERVICES
    base = {(False, False): SigV4Auth, (True, False): S3SigV4Auth,
            (False, True): SigV4QueryAuth, (True, True): S3SigV4QueryAuth}[(s3, auth.presigned)]

    class Pinned(base):
        def headers_to_sign(self, request):
            return signed_map

        def payload(self, request):
            if s3 and auth.presigned:
                return super().payload(request)  # UNSIGNED-PAYLOAD
            return body_hash

    return Pinned(creds, service, region)


class Verifier:
    def __init__(self, creds):
        self.creds = creds  # akid -> {"secret", "token"}
        self._ecc = {}
        self._lock = threading.Lock()

    def ecc(self, akid):
        with self._lock:
            if akid not in self._ecc:
                self._ecc[akid] = aws_crt.EccKey(akid, self.creds[akid]["secret"])
            return self._ecc[akid]

    def head(self, rx, auth, host, body_hash, now=None):
        """Checks the request signature; returns the context the body chain needs."""
        if auth.akid not in self.creds:
            raise Reject("InvalidAccessKeyId", "unknown access key id " + auth.akid)
        c = self.creds[auth.akid]
        date, region, service = auth.scope_parts()
        amz = auth.amz_date or ""
        if not re.fullmatch(r"\d{8}T\d{6}Z", amz) or amz[:8] != date:
            raise Reject("AuthorizationHeaderMalformed", "X-Amz-Date missing or not the scope day")
        t = datetime.datetime.strptime(amz, "%Y%m%dT%H%M%SZ").replace(tzinfo=datetime.timezone.utc)
        now = now or datetime.datetime.now(datetime.timezone.utc)
        if auth.presigned:
            if not auth.expires.isdigit() or not 1 <= int(auth.expires) <= 604800:
                raise Reject("AuthorizationQueryParametersError", "bad X-Amz-Expires")
            if now > t + datetime.timedelta(seconds=int(auth.expires)):
                raise Reject("AccessDenied", "Request has expired")
            if t - now > datetime.timedelta(seconds=MAX_SKEW):
                raise Reject("RequestTimeTooSkewed", "X-Amz-Date in the future")
        elif abs((now - t).total_seconds()) > MAX_SKEW:
            raise Reject("RequestTimeTooSkewed", "X-Amz-Date too far from now")
        names = auth.signed.split(";")
        if "host" not in names:
            raise Reject("AuthorizationHeaderMalformed", "host is not signed")
        # session token: the real one, present exactly when the credentials have one
        if c.get("token"):
            if auth.token != [c["token"]]:
                raise Reject("InvalidToken", "missing or wrong security token")
            if service in S3_SERVICES and not auth.token_signed:
                raise Reject("AccessDenied", "S3 wants X-Amz-Security-Token signed")
        elif auth.token:
            raise Reject("InvalidToken", "a security token for long-term credentials")
        if auth.alg == V4A:
            if not auth.region_set or (not auth.presigned and "x-amz-region-set" not in names):
                raise Reject("AuthorizationHeaderMalformed", "SigV4A without a signed region set")
        if service in S3_SERVICES and not auth.presigned:
            if "x-amz-content-sha256" not in names:
                raise Reject("AuthorizationHeaderMalformed", "x-amz-content-sha256 is not signed")
            # S3: "There were headers present in the request which were not signed"
            unsigned = sorted({k.lower() for k, _ in rx.headers if k.lower().startswith("x-amz-")}
                              - set(names))
            if unsigned:
                raise Reject("AccessDenied", "unsigned x-amz-* headers: " + ",".join(unsigned))
        signed_map = HTTPHeaders()
        for n in names:
            values = rx.all(n)
            if not values:
                raise Reject("AuthorizationHeaderMalformed", "signed header %s missing" % n)
            for v in values:
                signed_map[n] = v
        target = auth.path + "?" + auth.signed_query if auth.presigned else rx.target
        if auth.presigned and not auth.signed_query:
            target = auth.path
        req = AWSRequest(method=rx.method, url="https://" + host + target)
        req.headers = HTTPHeaders()
        for n in names:
            for v in rx.all(n):
                req.headers[n] = v
        req.context["timestamp"] = amz
        creds = Credentials(auth.akid, c["secret"], c.get("token"))
        signer = _signer(auth, creds, service, region or "us-east-1", signed_map, body_hash)
        if signer.signed_headers(signed_map) != auth.signed:
            raise Reject("AuthorizationHeaderMalformed", "SignedHeaders not sorted/lower-case")
        creq = signer.canonical_request(req)
        if auth.alg == V4:
            if signer.credential_scope(req) != auth.scope:
                raise Reject("AuthorizationHeaderMalformed", "scope mismatch")
            sts = signer.string_to_sign(req, creq)
            want = signer.signature(sts, req)
            if not hmac.compare_digest(want, auth.signature):
                raise Reject("SignatureDoesNotMatch", "SigV4 signature does not match")
            key = signer._sign(("AWS4" + c["secret"]).encode(), date)
            for step in (region, service, "aws4_request"):
                key = signer._sign(key, step)
            return {"alg": V4, "amz": amz, "scope": auth.scope, "seed": auth.signature,
                    "key": key}
        sts = "\n".join([V4A, amz, auth.scope, hashlib.sha256(creq.encode()).hexdigest()])
        ecc = self.ecc(auth.akid)
        if not ecc.verify_sts(sts, auth.signature):
            raise Reject("SignatureDoesNotMatch", "SigV4A signature does not verify")
        return {"alg": V4A, "amz": amz, "scope": auth.scope, "seed": auth.signature, "ecc": ecc}

    @staticmethod
    def chunk(ctx, label, prev, lines, wire_sig):
        sts = "\n".join([ctx["alg"] + label, ctx["amz"], ctx["scope"], prev] + lines)
        if ctx["alg"] == V4:
            want = hmac.new(ctx["key"], sts.encode(), hashlib.sha256).hexdigest()
            if not hmac.compare_digest(want, wire_sig):
                raise Reject("SignatureDoesNotMatch", label.strip("-").lower() + " signature")
            return wire_sig
        if len(wire_sig) != 144 or "*" in wire_sig.rstrip("*"):
            raise Reject("SignatureDoesNotMatch", "SigV4A chunk signature not padded to 144")
        if not ctx["ecc"].verify_sts(sts, wire_sig):
            raise Reject("SignatureDoesNotMatch", label.strip("-").lower() + " signature")
        return wire_sig.rstrip("*")


class Body:
    """One request body (Content-Length or Transfer-Encoding: chunked), read in pieces."""

    def __init__(self, rfile, headers):
        self.rfile = rfile
        self.chunked = "chunked" in (headers.get("Transfer-Encoding") or "").lower()
        self.left = 0 if self.chunked else int(headers.get("Content-Length") or 0)
        self.eof = False
        self.buf = bytearray()
        self.wire_len = 0

    def _raw(self, n):
        if self.eof:
            return b""
        if not self.chunked:
            if self.left == 0:
                self.eof = True
                return b""
            d = self.rfile.read(min(n, self.left))
            if not d:
                raise Reject("IncompleteBody", "body ended early", 400)
            self.left -= len(d)
            self.wire_len += len(d)
            return d
        if self.left == 0:
            line = self.rfile.readline(1024)
            size = int(line.split(b";")[0].strip() or b"x", 16)
            if size == 0:
                while self.rfile.readline(8192) not in (b"\r\n", b"\n", b""):
                    pass
                self.eof = True
                return b""
            self.left = size
        d = self.rfile.read(min(n, self.left))
        if not d:
            raise Reject("IncompleteBody", "body ended early", 400)
        self.left -= len(d)
        self.wire_len += len(d)
        if self.left == 0:
            self.rfile.readline(8)
        return d

    def read(self, n):
        while len(self.buf) < n:
            d = self._raw(max(65536, n - len(self.buf)))
            if not d:
                break
            self.buf += d
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out

    def readline(self, limit):
        while b"\n" not in self.buf and len(self.buf) < limit:
            d = self._raw(65536)
            if not d:
                break
            self.buf += d
        i = self.buf.find(b"\n")
        n = i + 1 if 0 <= i < limit else min(limit, len(self.buf))
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out

    def pieces(self):
        if self.buf:
            yield bytes(self.buf)
            self.buf.clear()
        while True:
            d = self._raw(1 << 20)
            if not d:
                return
            yield d

    def drain(self):
        for _ in self.pieces():
            pass


class Digest:
    """Hashes of the decoded payload."""

    def __init__(self, sink=None):
        self.sha = hashlib.sha256()
        self.md5 = hashlib.md5()
        self.crc32 = 0
        self.len = 0
        self.sink = sink

    def update(self, d):
        self.sha.update(d)
        self.md5.update(d)
        self.crc32 = zlib.crc32(d, self.crc32)
        self.len += len(d)
        if self.sink is not None:
            self.sink.write(d)


def read_aws_chunked(body, digest, signed, trailer):
    """Parses an aws-chunked body. Returns ([(wire_sig, data_sha256)], [(name, value)],
    trailer_sig). Memory: one read piece."""
    chunks = []
    while True:
        line = body.readline(300)
        m = CHUNK_RE.match(line)
        if not m or (m.group(2) is None) == signed:
            raise Reject("IncompleteSignature", "bad aws-chunked header line %r" % line[:80])
        size = int(m.group(1), 16)
        h = hashlib.sha256()
        left = size
        while left:
            d = body.read(min(left, 1 << 20))
            if not d:
                raise Reject("IncompleteBody", "aws-chunked data ended early", 400)
            h.update(d)
            digest.update(d)
            left -= len(d)
        chunks.append(((m.group(2) or b"").decode(), h.hexdigest()))
        if size == 0:
            break
        if body.read(2) != b"\r\n":
            raise Reject("IncompleteBody", "chunk data not followed by CRLF", 400)
    trailers, tsig = [], None
    if trailer:
        while True:
            line = body.readline(8192)
            if not line.endswith(b"\r\n"):
                raise Reject("IncompleteBody", "trailer ended early", 400)
            if line == b"\r\n":
                if tsig is not None or (not signed and trailers):
                    break
                continue  # an empty line between the last chunk and the trailers
            name, sep, value = line[:-2].decode().partition(":")
            if not sep:
                raise Reject("IncompleteBody", "bad trailer line", 400)
            if name.lower() == "x-amz-trailer-signature":
                tsig = value.strip()
            else:
                trailers.append((name.strip().lower(), value.strip()))
        if signed and tsig is None:
            raise Reject("IncompleteSignature", "no x-amz-trailer-signature")
    elif body.read(2) != b"\r\n":
        raise Reject("IncompleteBody", "no CRLF after the final chunk", 400)
    if body.read(1):
        raise Reject("IncompleteBody", "bytes after the aws-chunked body", 400)
    return chunks, trailers, tsig


def check_checksum(name, value, digest):
    if name == "x-amz-checksum-crc32":
        want = base64.b64encode(digest.crc32.to_bytes(4, "big")).decode()
    elif name == "x-amz-checksum-sha256":
        want = base64.b64encode(digest.sha.digest()).decode()
    else:
        return
    if value != want:
        raise Reject("BadDigest", "%s does not match the data" % name, 400)


class Store:
    def __init__(self, root):
        self.root = root
        self.lock = threading.Lock()
        self.objects = {}  # "/bucket/key" -> {"size", "sha256", "etag"}
        self.uploads = {}  # upload id -> {"key", "parts": {n: (path, etag, size)}}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "aws-verifier"

    def log_message(self, *args):
        pass

    def _reply(self, status, body=b"", ctype="application/json", extra=()):
        self.send_response(status)
        for k, v in extra:
            self.send_header(k, v)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _record(self, **kw):
        log = self.server.reqlog
        if log is None:
            return
        with self.server.loglock:
            log.write(json.dumps(kw) + "\n")
            log.flush()

    def _admin(self):
        # /__verifier/object?key=/bucket/key: what was stored (unauthenticated, tests only)
        q = dict(parse_qsl(urlsplit(self.path).query))
        with self.server.store.lock:
            o = self.server.store.objects.get(q.get("key", ""))
        self._reply(200 if o else 404, json.dumps(o or {}).encode())

    def _any(self):
        if self.path.startswith("/__verifier/"):
            return self._admin()
        rx = Received(self.command, self.path, list(self.headers.items()))
        host = (self.headers.get("Host") or "").strip()
        body = Body(self.rfile, self.headers)
        rec = {"method": self.command, "host": host, "target": self.path,
               "authorization": self.headers.get("Authorization"),
               "token": self.headers.get("X-Amz-Security-Token")}
        store = self.server.store
        part_file = None
        try:
            auth = None
            try:
                auth = Auth(rx)
                rec.update(akid=auth.akid, alg=auth.alg, presigned=auth.presigned)
            except Reject:
                body.drain()
                raise
            path = urlsplit(self.path).path
            q = dict(parse_qsl(urlsplit(self.path).query, keep_blank_values=True))
            sha_hdr = (rx.get("x-amz-content-sha256") or "").strip()
            streaming = sha_hdr.startswith("STREAMING-")
            if "partNumber" in q and "uploadId" in q and store.root:
                part_file = os.path.join(store.root, "%s.%s" % (q["uploadId"],
                                                                 int(q["partNumber"])))
            sink = open(part_file, "wb") if part_file else None
            digest = Digest(sink)
            chunks = trailers = tsig = None
            try:
                if streaming and "aws-chunked" not in (rx.get("content-encoding") or ""):
                    raise Reject("InvalidRequest", "STREAMING payload without aws-chunked")
                if streaming:
                    chunks, trailers, tsig = read_aws_chunked(
                        body, digest, signed=sha_hdr != "STREAMING-UNSIGNED-PAYLOAD-TRAILER",
                        trailer=sha_hdr.endswith("-TRAILER"))
                else:
                    for d in body.pieces():
                        digest.update(d)
            finally:
                if sink:
                    sink.close()
            ctx = self.server.verifier.head(rx, auth, host, digest.sha.hexdigest())
            if re.fullmatch(r"[0-9a-f]{64}", sha_hdr) and sha_hdr != digest.sha.hexdigest():
                raise Reject("XAmzContentSHA256Mismatch", "body does not hash to x-amz-content-sha256", 400)
            if streaming:
                want = rx.get("x-amz-decoded-content-length")
                if want is None or int(want) != digest.len:
                    raise Reject("IncompleteBody", "x-amz-decoded-content-length mismatch", 400)
                if sha_hdr != "STREAMING-UNSIGNED-PAYLOAD-TRAILER":
                    if (ctx["alg"] == V4A) != ("ECDSA" in sha_hdr):
                        raise Reject("InvalidRequest", "payload type vs algorithm")
                    prev = ctx["seed"]
                    for wire_sig, data_hash in chunks:
                        prev = Verifier.chunk(ctx, "-PAYLOAD", prev, [EMPTY_SHA256, data_hash],
                                              wire_sig)
                    if tsig is not None:
                        canon = "".join("%s:%s\n" % t for t in sorted(trailers))
                        Verifier.chunk(ctx, "-TRAILER", prev,
                                       [hashlib.sha256(canon.encode()).hexdigest()], tsig)
                for name in (rx.get("x-amz-trailer") or "").lower().replace(" ", "").split(","):
                    if name and name not in dict(trailers or []):
                        raise Reject("IncompleteBody", "announced trailer %s missing" % name, 400)
                for name, value in trailers or []:
                    check_checksum(name, value, digest)
            for name in ("x-amz-checksum-crc32", "x-amz-checksum-sha256"):
                if rx.get(name) is not None:
                    check_checksum(name, rx.get(name).strip(), digest)
        except Reject as r:
            if part_file and os.path.exists(part_file):
                os.unlink(part_file)
            if r.status == 400:
                self.close_connection = True  # the body framing may be lost
            rec.update(verdict="fail", reason=r.reason)
            self._record(**rec)
            out = {"error": r.code, "reason": r.reason, "akid": rec.get("akid")}
            self._reply(r.status, json.dumps(out).encode(),
                        extra=[("X-Verify", r.reason)])
            return
        etag = '"%s"' % digest.md5.hexdigest()
        rec.update(verdict="ok", body_len=digest.len, sha256=digest.sha.hexdigest(),
                   chunks=len(chunks) if chunks else 0, trailers=len(trailers or []))
        self._record(**rec)
        ok = [("X-Verify", "ok")]
        s3 = auth.scope.split("/")[-2] in S3_SERVICES
        if s3 and self.command == "POST" and "uploads" in q:
            uid = uuid.uuid4().hex
            with store.lock:
                store.uploads[uid] = {"key": path, "parts": {}}
            bucket, _, key = path.lstrip("/").partition("/")
            xml = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<InitiateMultipartUploadResult "
                   "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Bucket>%s</Bucket>"
                   "<Key>%s</Key><UploadId>%s</UploadId></InitiateMultipartUploadResult>"
                   % (bucket, key, uid))
            return self._reply(200, xml.encode(), "application/xml", ok)
        if s3 and self.command == "PUT" and "uploadId" in q:
            with store.lock:
                up = store.uploads.get(q["uploadId"])
                if up is not None:
                    up["parts"][int(q.get("partNumber", "0"))] = (part_file, etag, digest.len)
            if up is None:
                return self._reply(404, b'{"error": "NoSuchUpload"}', extra=ok)
            return self._reply(200, b"", extra=ok + [("ETag", etag)])
        if s3 and self.command == "POST" and "uploadId" in q:
            with store.lock:
                up = store.uploads.pop(q["uploadId"], None)
            if up is None:
                return self._reply(404, b'{"error": "NoSuchUpload"}', extra=ok)
            whole, size = hashlib.sha256(), 0
            for n in sorted(up["parts"]):
                pf, _, psize = up["parts"][n]
                size += psize
                if pf:
                    with open(pf, "rb") as f:
                        for d in iter(lambda: f.read(1 << 20), b""):
                            whole.update(d)
                    os.unlink(pf)
            with store.lock:
                store.objects[path] = {"size": size, "sha256": whole.hexdigest() if store.root
                                       else None, "parts": len(up["parts"])}
            bucket, _, key = path.lstrip("/").partition("/")
            xml = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<CompleteMultipartUploadResult "
                   "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Location>https://%s%s"
                   "</Location><Bucket>%s</Bucket><Key>%s</Key><ETag>&quot;%s-%d&quot;</ETag>"
                   "</CompleteMultipartUploadResult>"
                   % (host, path, bucket, key, uuid.uuid4().hex, len(up["parts"])))
            return self._reply(200, xml.encode(), "application/xml", ok)
        if s3 and self.command == "PUT":
            with store.lock:
                store.objects[path] = {"size": digest.len, "sha256": digest.sha.hexdigest(),
                                       "parts": 0}
            return self._reply(200, b"", extra=ok + [("ETag", etag)])
        out = {"ok": True, "akid": auth.akid, "alg": auth.alg, "presigned": auth.presigned,
               "body_len": digest.len, "sha256": digest.sha.hexdigest(),
               "chunks": len(chunks) if chunks else 0}
        self._reply(200, json.dumps(out).encode(), extra=ok + [("ETag", etag)])

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = do_PATCH = _any


def self_test(verifier):
    """awscrt-signed requests (all configured credentials) must verify; tampered ones not."""
    import io

    from awscrt import auth as crt_auth
    from awscrt import http as crt_http

    aws_crt.self_test()
    for akid, c in verifier.creds.items():
        prov = crt_auth.AwsCredentialsProvider.new_static(akid, c["secret"], c.get("token"))
        for alg in (crt_auth.AwsSigningAlgorithm.V4, crt_auth.AwsSigningAlgorithm.V4_ASYMMETRIC):
            for st in (crt_auth.AwsSignatureType.HTTP_REQUEST_HEADERS,
                       crt_auth.AwsSignatureType.HTTP_REQUEST_QUERY_PARAMS):
                for service in ("s3", "execute-api"):
                    s3 = service == "s3"
                    body = b"" if st == crt_auth.AwsSignatureType.HTTP_REQUEST_QUERY_PARAMS \
                        else b"self test body"
                    req = crt_http.HttpRequest(
                        "PUT" if body else "GET", "/b/a%20key/x?list-type=2&prefix=a%2Fb",
                        crt_http.HttpHeaders([("Host", "selftest.test"),
                                              ("X-Amz-Meta-A", "1   2")]),
                        io.BytesIO(body))
                    cfg = crt_auth.AwsSigningConfig(
                        alg, st, prov, "us-west-2" if alg == crt_auth.AwsSigningAlgorithm.V4
                        else "us-west-2,eu-west-1", service,
                        use_double_uri_encode=not s3, should_normalize_uri_path=not s3,
                        signed_body_value=("UNSIGNED-PAYLOAD" if s3 else None),
                        signed_body_header_type=(
                            crt_auth.AwsSignedBodyHeaderType.X_AMZ_CONTENT_SHA_256
                            if s3 and st == crt_auth.AwsSignatureType.HTTP_REQUEST_HEADERS
                            else crt_auth.AwsSignedBodyHeaderType.NONE),
                        expiration_in_seconds=(300 if st == crt_auth.AwsSignatureType.
                                               HTTP_REQUEST_QUERY_PARAMS else None))
                    crt_auth.aws_sign_request(req, cfg).result(10)
                    rx = Received(req.method, req.path, list(req.headers))
                    verifier.head(rx, Auth(rx), "selftest.test",
                                  hashlib.sha256(body).hexdigest())
                    bad = Received(req.method, req.path.replace("/x?", "/y?"), rx.headers)
                    try:
                        verifier.head(bad, Auth(bad), "selftest.test",
                                      hashlib.sha256(body).hexdigest())
                    except Reject:
                        pass
                    else:
                        raise AssertionError("a tampered request verified")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--listen", default="127.0.0.3:443")
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--creds", required=True)
    ap.add_argument("--log")
    ap.add_argument("--store")
    a = ap.parse_args()
    with open(a.creds) as f:
        creds = json.load(f)
    verifier = Verifier(creds)
    self_test(verifier)
    addr, port = a.listen.rsplit(":", 1)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(a.cert, a.key)

    class Server(ThreadingHTTPServer):
        daemon_threads = True
        request_queue_size = 64

        def get_request(self):
            sock, peer = super().get_request()
            # the handshake happens in the handler thread, on first read
            return ctx.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), peer

    srv = Server((addr, int(port)), Handler)
    srv.verifier = verifier
    srv.store = Store(a.store)
    srv.reqlog = open(a.log, "a") if a.log else None
    srv.loglock = threading.Lock()
    print("aws_verifier ready (self test passed)", flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
