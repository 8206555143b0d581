#!/bin/bash
# Issue 31 part 4: the SOCKS5 listener (--listen-socks). Each target is decided like an
# explicit-proxy CONNECT: curl (--socks5-hostname, --socks5 with an IPv4 target), Python
# (PySocks through requests), git (ALL_PROXY: dumb HTTP, and clone and push over HTTPS with the
# smart protocol, git http-backend behind a TLS server), HTTPS intercepted with airlock's CA,
# plain HTTP inside, a passthrough entry, the secret guard on the name, the JSON events, and
# the refusals (ruleset, BIND, UDP ASSOCIATE, address type, no acceptable method, not SOCKS5
# at all) with the reply codes of RFC 1928 and their log lines.
. "$(dirname "$0")/lib.sh"
t_enter_netns "$@"
HERE=$(cd "$(dirname "$0")" && pwd)

cat > "$T_DIR/allow.yaml" <<'YAML'
domains: ["app.test", "127.0.0.2", "git.test"]
url_prefixes:
  - host: pass.test
    tls: passthrough
YAML
CANARY="CANARY-5be1d0-do-not-send"
cat > "$T_DIR/repl.json" <<JSON
{"canaries": [{"name": "socks-marker", "value": "$CANARY"}]}
JSON
ip addr add 127.0.0.3/8 dev lo 2>/dev/null || true
t_start_resolver --address=/git.test/127.0.0.3
t_upstream_ca
t_upstream_cert "DNS:app.test,DNS:pass.test,DNS:git.test" "$T_DIR/up"
cat > "$T_DIR/tls_up.py" <<PYX
import ssl, sys, runpy, http.server
addr, port, cert, key, log = sys.argv[1:6]
sys.argv = ["upstream.py", addr, port, log]
orig = http.server.ThreadingHTTPServer.get_request
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
def get_request(self):
    c, a = orig(self)
    return ctx.wrap_socket(c, server_side=True), a
http.server.ThreadingHTTPServer.get_request = get_request
runpy.run_path("$HERE/upstream.py", run_name="__main__")
PYX
"$PY" "$T_DIR/tls_up.py" 127.0.0.2 443 "$T_DIR/up.pem" "$T_DIR/up.key" "$T_DIR/up.log" >/dev/null 2>&1 &
T_PIDS+=($!)
"$PY" "$HERE/upstream.py" 127.0.0.2 80 "$T_DIR/up80.log" >/dev/null 2>&1 &
T_PIDS+=($!)
t_wait_port 127.0.0.2 443 || exit 1
t_wait_port 127.0.0.2 80 || exit 1
# a git repository served over the dumb HTTP protocol (static files) on git.test:80
git init -q --bare "$T_DIR/www/repo.git" && git init -q "$T_DIR/src" &&
    git -C "$T_DIR/src" -c user.name=t -c user.email=t@t commit -q --allow-empty -m "through socks" &&
    git -C "$T_DIR/src" push -q "$T_DIR/www/repo.git" HEAD:refs/heads/main &&
    git -C "$T_DIR/www/repo.git" symbolic-ref HEAD refs/heads/main &&
    git -C "$T_DIR/www/repo.git" update-server-info
"$PY" -m http.server --bind 127.0.0.3 --directory "$T_DIR/www" 80 >/dev/null 2>&1 &
T_PIDS+=($!)
t_wait_port 127.0.0.3 80 || exit 1
# the same repository over HTTPS on git.test:443, git's smart protocol: git http-backend (CGI)
git -C "$T_DIR/www/repo.git" config http.receivepack true
cat > "$T_DIR/git_https.py" <<'PYX'
import http.server, os, ssl, subprocess, sys
addr, port, cert, key, root = sys.argv[1:6]
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def cgi(self):
        path, _, query = self.path.partition("?")
        body = b""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            while True:
                n = int(self.rfile.readline().split(b";")[0], 16)
                body += self.rfile.read(n) if n else b""
                self.rfile.readline()
                if n == 0:
                    break
        else:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        env = {"GIT_PROJECT_ROOT": root, "GIT_HTTP_EXPORT_ALL": "1", "PATH_INFO": path,
               "QUERY_STRING": query, "REQUEST_METHOD": self.command, "REMOTE_ADDR": "127.0.0.1",
               "REMOTE_USER": "agent", "CONTENT_LENGTH": str(len(body)),
               "CONTENT_TYPE": self.headers.get("Content-Type", ""),
               "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
               "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""), "PATH": os.environ["PATH"]}
        out = subprocess.run(["git", "http-backend"], input=body, env=env,
                             capture_output=True).stdout
        head, _, rest = out.partition(b"\r\n\r\n")
        status, hdrs = 200, []
        for line in head.split(b"\r\n"):
            k, _, v = line.decode().partition(":")
            if k.lower() == "status":
                status = int(v.split()[0])
            elif k:
                hdrs.append((k, v.strip()))
        self.send_response(status)
        for k, v in hdrs:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(rest)))
        self.end_headers()
        self.wfile.write(rest)
    do_GET = do_POST = cgi
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
srv = http.server.ThreadingHTTPServer((addr, int(port)), H)
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
srv.serve_forever()
PYX
"$PY" "$T_DIR/git_https.py" 127.0.0.3 443 "$T_DIR/up.pem" "$T_DIR/up.key" "$T_DIR/www" \
    2> "$T_DIR/git_https.err" &
T_PIDS+=($!)
t_wait_port 127.0.0.3 443 || exit 1
EV="$T_DIR/events.jsonl"
t_start_airlock "$T_DIR/allow.yaml" --upstream-ca "$T_DIR/upca.pem" \
    --replacements "$T_DIR/repl.json" --events "$EV" --listen-socks 127.0.0.1:1080 \
    --allow-upstream-cidr 127.0.0.3/32 || exit 1
CA="$T_DIR/confdir/mitmproxy-ca-cert.pem"
S=127.0.0.1:1080

# ---- curl, the name resolved by airlock (socks5h) ----
out=$(curl -s -m 5 --socks5-hostname $S --cacert "$CA" https://app.test/echo-headers)
t_contains "curl --socks5-hostname: allowed host, intercepted" "$out" '"request_line": "GET /echo-headers HTTP/1.1"'
t_logged "allowed SOCKS line" '^allowed SOCKS app.test:443 -> 200$'
t_logged "the request inside has its own line" '^allowed GET https://app.test/echo-headers -> 200$'
out=$(curl -s -m 5 --socks5-hostname $S --cacert "$CA" https://blocked.test/ -o /dev/null -w '%{http_code}'; echo " rc=$?")
t_eq "curl --socks5-hostname: blocked host refused in the handshake (curl rc 97)" "000 rc=97" "$out"
t_logged "blocked SOCKS line" '^BLOCKED SOCKS blocked.test:443 -> 403$'
out=$(ALL_PROXY=socks5h://$S curl -s -m 5 --cacert "$CA" https://app.test/x/echo-headers)
t_contains "ALL_PROXY=socks5h:// works as --socks5-hostname" "$out" '"request_line": "GET /x/echo-headers HTTP/1.1"'

# ---- plain HTTP inside, and an IPv4 target (curl resolves: --socks5) ----
out=$(curl -s -m 5 --socks5-hostname $S http://app.test/plain/echo-headers)
t_contains "plain HTTP inside a SOCKS tunnel" "$out" '"request_line": "GET /plain/echo-headers HTTP/1.1"'
t_logged "plain HTTP request line" '^allowed GET http://app.test/plain/echo-headers -> 200$'
out=$(curl -s -m 5 --socks5 $S http://127.0.0.2/v4/echo-headers)
t_contains "curl --socks5: IPv4 target allowed by the allowlist" "$out" '"request_line": "GET /v4/echo-headers HTTP/1.1"'
t_logged "IPv4 SOCKS line" '^allowed SOCKS 127.0.0.2:80 -> 200$'
out=$(curl -s -m 5 --socks5 $S http://127.0.0.9/ -o /dev/null -w '%{http_code}'; echo " rc=$?")
t_eq "curl --socks5: IPv4 target not allowed" "000 rc=97" "$out"
t_logged "IPv4 blocked line" '^BLOCKED SOCKS 127.0.0.9:80 -> 403$'

# ---- git through ALL_PROXY (libcurl reads it), plain HTTP inside the tunnel ----
ALL_PROXY=socks5h://$S timeout 30 git clone -q http://git.test/repo.git "$T_DIR/clone" 2> "$T_DIR/git.err"
t_eq "git clone through ALL_PROXY=socks5h://" "through socks" "$(git -C "$T_DIR/clone" log -1 --format=%s 2>&1)"
t_logged "git's tunnel line" '^allowed SOCKS git.test:80 -> 200$'
t_logged "git's requests inside" '^allowed GET http://git.test/repo.git/info/refs?service=git-upload-pack -> 200$'

# ---- git over HTTPS through ALL_PROXY: intercepted (GIT_SSL_CAINFO), the smart protocol ----
ALL_PROXY=socks5h://$S GIT_SSL_CAINFO=$CA timeout 30 git clone -q https://git.test/repo.git \
    "$T_DIR/clone-https" 2> "$T_DIR/git-https.err"
t_eq "git clone https:// through ALL_PROXY=socks5h://" "through socks|" \
    "$(git -C "$T_DIR/clone-https" log -1 --format=%s 2>&1)|$(head -c 300 "$T_DIR/git-https.err")"
t_logged "git's HTTPS tunnel line" '^allowed SOCKS git.test:443 -> 200$'
t_logged "git's ref discovery inside, intercepted" \
    '^allowed GET https://git.test/repo.git/info/refs?service=git-upload-pack -> 200$'
t_logged "git's smart-protocol POST inside" '^allowed POST https://git.test/repo.git/git-upload-pack -> 200$'
git -C "$T_DIR/clone-https" -c user.name=t -c user.email=t@t commit -q --allow-empty -m "pushed"
ALL_PROXY=socks5h://$S GIT_SSL_CAINFO=$CA timeout 30 git -C "$T_DIR/clone-https" push -q \
    origin HEAD:refs/heads/agent 2> "$T_DIR/git-push.err"
t_eq "git push https:// through ALL_PROXY=socks5h://" "pushed|" \
    "$(git -C "$T_DIR/www/repo.git" log -1 --format=%s agent 2>&1)|$(head -c 300 "$T_DIR/git-push.err")"
t_logged "git's push POST inside" '^allowed POST https://git.test/repo.git/git-receive-pack -> 200$'

# ---- passthrough entry: relayed unread, the upstream's own certificate ----
out=$(curl -s -m 5 --socks5-hostname $S --cacert "$T_DIR/upca.pem" https://pass.test/echo-headers)
t_contains "passthrough through SOCKS" "$out" '"request_line": "GET /echo-headers HTTP/1.1"'
t_logged "passthrough SOCKS line" '^allowed SOCKS pass.test:443 -> 200 tunnel$'

# ---- the secret guard on the name, before the allowlist and before any lookup ----
out=$(curl -s -m 5 --socks5-hostname $S "https://$CANARY.app.test/" -o /dev/null -w '%{http_code}'; echo " rc=$?")
t_eq "a canary in the SOCKS target: refused in the handshake" "000 rc=97" "$out"
t_logged "... logged without the target" \
    '^BLOCKED SOCKS - -> 403 (leak: canary socks-marker, raw, in the SOCKS target)$'
t_check "... the name never reached the resolver" bash -c "! grep -qi '$CANARY' '$T_DIR/dnsmasq.log'"

# ---- Python: requests over PySocks (python3-socks) ----
if "$PY" -c 'import socks' 2>/dev/null; then
    out=$("$PY" - "$CA" <<'PYX'
import sys, requests
p = {"https": "socks5h://127.0.0.1:1080", "http": "socks5h://127.0.0.1:1080"}
a = requests.get("https://app.test/py/echo-headers", proxies=p, verify=sys.argv[1], timeout=5)
try:
    requests.get("https://blocked.test/", proxies=p, verify=sys.argv[1], timeout=5)
    b = "no error"
except requests.exceptions.ConnectionError as e:
    b = "refused" if "not allowed" in str(e) else str(e)[:120]
print(a.status_code, b)
PYX
)
    t_eq "python requests + PySocks: allowed, then refused by ruleset" "200 refused" "$out"
else
    t_not_made "python3-socks not installed (apt-get install python3-socks)"
fi

# ---- refusals a tiny client sees byte by byte ----
raw() { # raw HEX-TO-SEND: prints the hex of what airlock answered before it closed
    "$PY" - "$1" <<'PYX'
import socket, sys
s = socket.create_connection(("127.0.0.1", 1080), timeout=5)
s.sendall(bytes.fromhex(sys.argv[1]))
out = b""
try:
    while True:
        d = s.recv(4096)
        if not d:
            break
        out += d
except socket.timeout:
    out += b"<timeout>"
print(out.hex())
PYX
}
out=$(raw 050100050200010102030401bb)
t_eq "BIND refused: command not supported (07)" "050005070001000000000000" "$out"
t_logged "BIND line" '^BLOCKED SOCKS - -> 400 (socks: BIND not supported)$'
# greeting, request and the first TLS bytes in one write: the plain replies come first
out=$(raw 05010005010003086170702e7465737401bb16030100056865656c6f)
t_eq "pipelined handshake: both replies in plain before the TLS alert" \
    "0500050000017f0000010438" "${out:0:24}"
t_check "... then a TLS alert record (${out:24:4})" test "${out:24:4}" = 1503
out=$(raw 050100050300010102030401bb)
t_eq "UDP ASSOCIATE refused (07)" "050005070001000000000000" "$out"
t_logged "UDP line" '^BLOCKED SOCKS - -> 400 (socks: UDP ASSOCIATE not supported)$'
out=$(raw 0501000501000901)
t_eq "unknown address type refused (08)" "050005080001000000000000" "$out"
t_logged "address type line" '^BLOCKED SOCKS - -> 400 (socks: address type not supported)$'
out=$(raw 050102)
t_eq "greeting without no-authentication: 05 ff, closed" "05ff" "$out"
t_logged "no method line" '^BLOCKED SOCKS - -> 400 (socks: no acceptable method (only no authentication is served))$'
out=$(raw 04010050010203040000)
t_eq "SOCKS4 greeting: closed without a reply" "" "$out"
t_logged "not SOCKS5 line" '^BLOCKED SOCKS - -> 400 (socks: not a SOCKS5 greeting)$'
t_eq "IPv6 target not in the allowlist: not allowed (02)" "050005020001000000000000" "$(raw 050100050100040000000000000000000000000000000101bb)"
t_logged "IPv6 blocked line" '^BLOCKED SOCKS \[::1\]:443 -> 403$'

# ---- the audit tools read the SOCKS lines as the CONNECT decisions they are ----
grep -E '^(allowed|BLOCKED) SOCKS [^ ]+:443 -> (200|403)( tunnel)?$' "$T_DIR/net.log" > "$T_DIR/socks.log"
out=$("$AIRLOCK" replay --allowlist "$T_DIR/allow.yaml" "$T_DIR/socks.log"); rc=$?
t_eq "replay of the SOCKS lines under the same allowlist: exit 0" 0 "$rc"
t_contains "replay: nothing changes" "$out" "no request would change."
n=$(wc -l < "$T_DIR/socks.log")
t_contains "replay: each SOCKS line re-decided ($n)" "$out" "re-decided:               $n ($n unchanged)"
# ---- the JSON events: valid against the schema, method SOCKS with host and port ----
if "$PY" -c 'import jsonschema' 2>/dev/null; then
    out=$("$PY" - "$AIRLOCK_SRC/docs/events.schema.json" "$EV" <<'PYX'
import json, sys, jsonschema
val = jsonschema.Draft202012Validator(json.load(open(sys.argv[1])),
                                      format_checker=jsonschema.FormatChecker())
bad = socks = 0
for line in open(sys.argv[2]):
    o = json.loads(line)
    bad += len(list(val.iter_errors(o)))
    if o.get("method") == "SOCKS" and o.get("host") == "app.test" and o.get("port") == 443:
        socks += 1
print(bad, "invalid;", "socks event" if socks else "no socks event")
PYX
)
    t_eq "events: all valid, the SOCKS decision with host and port" "0 invalid; socks event" "$out"
else
    t_not_made "python3-jsonschema not installed"
fi

kill -0 "$AIRLOCK_PID"; t_check "airlock survived" test $? -eq 0
t_done
