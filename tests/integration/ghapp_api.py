#!/usr/bin/python3
"""A fake GitHub API for test_ghapp.sh, over TLS with the test CA.

POST /app/installations/{id}/access_tokens: the Authorization must be "Bearer <JWT>", an
RS256 JWT whose signature verifies with the app's public key (cryptography), with iss = the
app id and exp - iat = 600; otherwise 401. Each call is one line of mints.jsonl (its number,
installation, body, Accept, whether the JWT verified, the JWT itself so that the test can look
for it in airlock's log). The answer is {"token", "expires_at"}: the first token is
ghs_real_token_value, later ones ghs_real_token_value_N. The files in the state directory
steer it: `mode` = ok | fail (HTTP 500) | garbage (200 without a token); `delay` = seconds to
wait before answering; `expires_in` = the token's lifetime in seconds (default 3600).

GET /installation/repositories?per_page=N&page=P: the installation's repositories, REPOS of
them (octo/repo0 .. octo/repo149, database ids 1000 + i, node IDs R_ of the current format),
paginated as GitHub does; the Authorization must be "Bearer ghs_real_token_value..." (else
401). Each call is one line of repos.jsonl (page, per_page, the token's check). `repos_mode` =
ok | fail (HTTP 500) steers it.

Any other request: one line of requests.jsonl (method, host, path, every Authorization value,
body length) and 200 {"ok": true}.

usage: ghapp_api.py ADDR PORT CERT KEY APP_PUBLIC_KEY APP_ID STATE_DIR
"""
import base64
import json
import os
import ssl
import sys
import threading
import time
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding

ADDR, PORT, CERT, KEY, PUB, APP_ID, STATE = sys.argv[1:8]
with open(PUB, "rb") as f:
    PUBLIC = serialization.load_pem_public_key(f.read())
LOCK = threading.Lock()
MINTS = [0]
REPOS = 150


def node_id(prefix, ids):
    """A GitHub node ID of the current format: prefix_base64url(MessagePack [ids...])."""
    b = bytes([0x90 | len(ids)])
    for v in ids:
        if v < 0x80:
            b += bytes([v])
        elif v <= 0xFF:
            b += bytes([0xCC, v])
        elif v <= 0xFFFF:
            b += bytes([0xCD]) + v.to_bytes(2, "big")
        elif v <= 0xFFFFFFFF:
            b += bytes([0xCE]) + v.to_bytes(4, "big")
        else:
            b += bytes([0xCF]) + v.to_bytes(8, "big")
    return prefix + "_" + base64.urlsafe_b64encode(b).decode().rstrip("=")


def b64d(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def setting(name, default):
    try:
        with open(os.path.join(STATE, name)) as f:
            return f.read().strip() or default
    except FileNotFoundError:
        return default


def record(name, obj):
    with LOCK:
        with open(os.path.join(STATE, name), "a") as f:
            f.write(json.dumps(obj) + "\n")


def check_jwt(auth):
    """(ok, why, claims, jwt) for an Authorization value."""
    if not auth.startswith("Bearer "):
        return False, "not Bearer", None, None
    jwt = auth[7:]
    parts = jwt.split(".")
    if len(parts) != 3:
        return False, "not three parts", None, jwt
    try:
        header = json.loads(b64d(parts[0]))
        claims = json.loads(b64d(parts[1]))
        PUBLIC.verify(b64d(parts[2]), (parts[0] + "." + parts[1]).encode(),
                      padding.PKCS1v15(), hashes.SHA256())
    except Exception as e:  # noqa: BLE001 - any failure is a refusal
        return False, "signature: %s" % type(e).__name__, None, jwt
    if header.get("alg") != "RS256":
        return False, "alg", claims, jwt
    if str(claims.get("iss")) != APP_ID:
        return False, "iss", claims, jwt
    now = time.time()
    if claims.get("exp", 0) - claims.get("iat", 0) != 600 or not (
            claims["iat"] <= now <= claims["exp"]):
        return False, "iat/exp", claims, jwt
    return True, "", claims, jwt


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def answer(self, status, obj):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def handle_any(self):
        body = self.body()
        path = self.path
        if self.command == "POST" and path.startswith("/app/installations/") and \
                path.endswith("/access_tokens"):
            self.mint(path.split("/")[3], body)
            return
        if self.command == "GET" and path.startswith("/installation/repositories?"):
            self.repos(path)
            return
        record("requests.jsonl", {"method": self.command, "host": self.headers.get("Host"),
                                  "path": path, "len": len(body),
                                  "auth": self.headers.get_all("Authorization") or []})
        self.answer(200, {"ok": True})

    def repos(self, path):
        from urllib.parse import parse_qs, urlsplit
        q = parse_qs(urlsplit(path).query)
        per_page = int(q.get("per_page", ["30"])[0])
        page = int(q.get("page", ["1"])[0])
        auth = self.headers.get("Authorization", "")
        ok = auth.startswith("Bearer ghs_real_token_value")
        record("repos.jsonl", {"page": page, "per_page": per_page, "auth_ok": ok})
        if not ok:
            self.answer(401, {"message": "Bad credentials"})
            return
        if setting("repos_mode", "ok") == "fail":
            self.answer(500, {"message": "Server Error"})
            return
        start = (page - 1) * per_page
        items = [{"id": 1000 + i, "node_id": node_id("R", [0, 1000 + i]),
                  "name": "repo%d" % i, "full_name": "octo/repo%d" % i, "private": True,
                  "owner": {"login": "octo", "id": 1, "node_id": node_id("O", [0, 1])}}
                 for i in range(start, min(start + per_page, REPOS))]
        self.answer(200, {"total_count": REPOS, "repository_selection": "selected",
                          "repositories": items})

    def mint(self, inst, body):
        ok, why, claims, jwt = check_jwt(self.headers.get("Authorization", ""))
        with LOCK:
            MINTS[0] += 1
            n = MINTS[0]
        try:
            parsed = json.loads(body or b"null")
        except ValueError:
            parsed = "<invalid>"
        record("mints.jsonl", {"n": n, "installation": inst, "body": parsed,
                               "accept": self.headers.get("Accept"), "jwt_ok": ok, "why": why,
                               "iss": claims and claims.get("iss"), "jwt": jwt,
                               "ctype": self.headers.get("Content-Type")})
        time.sleep(float(setting("delay", "0")))
        if not ok:
            self.answer(401, {"message": "A JSON web token could not be decoded"})
            return
        mode = setting("mode", "ok")
        if mode == "fail":
            self.answer(500, {"message": "Server Error"})
            return
        if mode == "garbage":
            self.answer(200, {"nothing": True})
            return
        exp = datetime.fromtimestamp(time.time() + int(setting("expires_in", "3600")),
                                     tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        token = "ghs_real_token_value" if n == 1 else "ghs_real_token_value_%d" % n
        self.answer(201, {"token": token, "expires_at": exp,
                          "permissions": (parsed or {}).get("permissions", {}),
                          "repository_selection": "selected"})

    do_GET = handle_any
    do_POST = handle_any
    do_PUT = handle_any


ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(CERT, KEY)
srv = ThreadingHTTPServer((ADDR, int(PORT)), Handler)
srv.daemon_threads = True
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
print("ready", flush=True)
srv.serve_forever()
