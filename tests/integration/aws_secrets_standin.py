#!/usr/bin/python3
"""A stand-in for AWS Secrets Manager (GetSecretValue) and SSM (GetParameter) over HTTPS.

Every request's SigV4 signature is computed again with botocore (Debian's python3-botocore)
from the request as received and the known credentials; a mismatch, an unknown key or a clock
off by more than 5 minutes is answered as AWS does (400 with a __type). The answers have the
documented JSON 1.1 shapes.

usage: aws_secrets_standin.py ADDR PORT CERT KEY STATE LOG
STATE is a JSON file read again whenever it changes:
  {"keys": {"AKID": ["SECRET", "TOKEN or null"]}, "region": "us-east-1",
   "secrets": {"id": "SecretString"}, "params": {"name": "Value"},
   "throttle": N,    # the next N requests answer 400 ThrottlingException
   "fail": N,        # the next N requests answer 500 InternalServiceError
   "malformed": N}   # the next N requests answer 200 with a body that is not JSON
LOG gets one line per request: "TARGET id -> status" (never a value).
"""
import datetime
import http.server
import json
import os
import ssl
import sys
import threading

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

ADDR, PORT, CERT, KEY, STATE, LOG = sys.argv[1:7]
LOCK = threading.Lock()
STATE_SEEN = {"mtime": None, "state": {}, "left": {}}


def state():
    """The state file, re-read when it changed; the counters restart then."""
    m = os.stat(STATE).st_mtime_ns
    if m != STATE_SEEN["mtime"]:
        with open(STATE) as f:
            st = json.load(f)
        STATE_SEEN.update(mtime=m, state=st,
                          left={k: int(st.get(k, 0)) for k in ("throttle", "fail", "malformed")})
    return STATE_SEEN["state"], STATE_SEEN["left"]


def check_signature(handler, body, st):
    """None when the signature is right, else the AWS error type."""
    auth = handler.headers.get("Authorization", "")
    if not auth.startswith("AWS4-HMAC-SHA256 "):
        return "MissingAuthenticationTokenException"
    parts = dict(p.strip().split("=", 1) for p in auth[len("AWS4-HMAC-SHA256 "):].split(","))
    akid, date, region, service, term = parts["Credential"].split("/")
    keys = st.get("keys", {})
    if akid not in keys:
        return "UnrecognizedClientException"
    secret, token = keys[akid]
    if token is not None and handler.headers.get("X-Amz-Security-Token") != token:
        return "UnrecognizedClientException"
    amz_date = handler.headers.get("X-Amz-Date", "")
    when = datetime.datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ")
    if abs((datetime.datetime.utcnow() - when).total_seconds()) > 300:
        return "InvalidSignatureException"
    target = handler.headers.get("X-Amz-Target", "")
    want = "ssm" if target.startswith("AmazonSSM.") else "secretsmanager"
    if service != want or region != st.get("region", "us-east-1") or term != "aws4_request" \
            or date != amz_date[:8]:
        return "InvalidSignatureException"
    signed = parts["SignedHeaders"].split(";")
    headers = {h: handler.headers.get(h, "") for h in signed}
    req = AWSRequest(method=handler.command, url="https://%s%s" % (headers.get("host", ""),
                                                                    handler.path),
                     data=body, headers=headers)
    req.context["timestamp"] = amz_date
    signer = SigV4Auth(Credentials(akid, secret, token), service, region)
    creq = signer.canonical_request(req)
    sig = signer.signature(signer.string_to_sign(req, creq), req)
    return None if sig == parts["Signature"] else "InvalidSignatureException"


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def answer(self, status, obj=None, raw=None):
        data = raw if raw is not None else json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/x-amz-json-1.1")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        target = self.headers.get("X-Amz-Target", "")
        with LOCK:
            st, left = state()
            status, obj, raw = self.decide(body, target, st, left)
            try:
                ident = json.loads(body).get("SecretId") or json.loads(body).get("Name")
            except ValueError:
                ident = "?"
            with open(LOG, "a") as f:
                f.write("%s %s -> %d%s\n" % (target, ident, status,
                                             "" if obj is None or "__type" not in obj
                                             else " " + obj["__type"]))
        self.answer(status, obj, raw)

    def decide(self, body, target, st, left):
        bad = check_signature(self, body, st)
        if bad is not None:
            return 400, {"__type": bad, "message": "The request signature we calculated does "
                         "not match the signature you provided."}, None
        for k, status, typ in (("throttle", 400, "ThrottlingException"),
                               ("fail", 500, "InternalServiceError")):
            if left[k] > 0:
                left[k] -= 1
                return status, {"__type": typ, "message": "Rate exceeded"}, None
        if left["malformed"] > 0:
            left["malformed"] -= 1
            return 200, None, b'{"SecretString": "not closed'
        req = json.loads(body)
        if target == "secretsmanager.GetSecretValue":
            sid = req.get("SecretId")
            if sid not in st.get("secrets", {}):
                return 400, {"__type": "ResourceNotFoundException",
                             "Message": "Secrets Manager can't find the specified secret."}, None
            return 200, {"ARN": "arn:aws:secretsmanager:us-east-1:123456789012:secret:%s-Ab12Cd"
                         % sid, "Name": sid, "VersionId": "EXAMPLE1-90ab-cdef-fedc-ba987EXAMPLE",
                         "SecretString": st["secrets"][sid], "VersionStages": ["AWSCURRENT"],
                         "CreatedDate": 1523477145.713}, None
        if target == "AmazonSSM.GetParameter":
            name = req.get("Name")
            if name not in st.get("params", {}):
                return 400, {"__type": "ParameterNotFound"}, None
            if req.get("WithDecryption") is not True:
                return 400, {"__type": "ValidationException"}, None
            return 200, {"Parameter": {"Name": name, "Type": "SecureString",
                                       "Value": st["params"][name], "Version": 3,
                                       "LastModifiedDate": 1699999999.0,
                                       "ARN": "arn:aws:ssm:us-east-1:123456789012:parameter" + name,
                                       "DataType": "text"}}, None
        return 400, {"__type": "UnknownOperationException"}, None


server = http.server.ThreadingHTTPServer((ADDR, int(PORT)), Handler)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(CERT, KEY)
server.socket = ctx.wrap_socket(server.socket, server_side=True)
server.serve_forever()
