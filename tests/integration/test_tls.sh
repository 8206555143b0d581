#!/bin/bash
# Issue 4: TLS interception through real clients (curl, Python requests, Node fetch, git,
# openssl s_client) against nginx with a test CA, in a private network namespace.
. "$(dirname "$0")/lib.sh"
t_enter_netns "$@"
HERE=$(cd "$(dirname "$0")" && pwd)

cat > "$T_DIR/allow.yaml" <<'YAML'
domains: ["nginx.test", "git.test", "bad.test", "wrong.test", "ws.test"]
url_prefixes:
  - host: api.test
    path: /v1/*
    methods: [GET]
YAML
ip addr add 127.0.0.3/8 dev lo 2>/dev/null || true
t_start_resolver --address=/ws.test/127.0.0.3
t_upstream_ca
t_upstream_cert "DNS:nginx.test,DNS:git.test,DNS:api.test,DNS:other.test" "$T_DIR/good"
t_upstream_cert "DNS:bad.test" "$T_DIR/bad" self
t_upstream_cert "DNS:ws.test" "$T_DIR/ws"
mkdir -p "$T_DIR/www"
echo "hello over tls" > "$T_DIR/www/index.html"
# a repository served over dumb HTTP
git init -q "$T_DIR/src" && (cd "$T_DIR/src" && echo hi > f && git add f &&
    git -c user.email=t@t -c user.name=t commit -qm one) &&
    git clone -q --bare "$T_DIR/src" "$T_DIR/www/repo.git" &&
    (cd "$T_DIR/www/repo.git" && git update-server-info)
chmod -R a+rX "$T_DIR"
t_start_nginx "
    }
    server {
        listen 127.0.0.2:443 ssl;
        ssl_certificate $T_DIR/good.pem; ssl_certificate_key $T_DIR/good.key;
        server_name nginx.test git.test api.test other.test wrong.test;
        root $T_DIR/www;
        location /echo { return 200 \"host=\$host sni=\$ssl_server_name\n\"; }
    }
    server {
        listen 127.0.0.2:443 ssl;
        ssl_certificate $T_DIR/bad.pem; ssl_certificate_key $T_DIR/bad.key;
        server_name bad.test;
        root $T_DIR/www;
" || exit 1
"$PY" "$HERE/ws.py" server 127.0.0.3 443 "$T_DIR/ws.pem" "$T_DIR/ws.key" > /dev/null 2>&1 &
T_PIDS+=($!)
t_wait_port 127.0.0.3 443
t_start_airlock "$T_DIR/allow.yaml" --upstream-ca "$T_DIR/upca.pem" \
    --allow-upstream-cidr 127.0.0.3/32 --handshake-timeout 1 || exit 1
CA="$T_DIR/confdir/mitmproxy-ca-cert.pem"
t_check "airlock wrote its CA" test -s "$CA"

# --- curl ---
out=$(curl -s -m 5 --cacert "$CA" https://nginx.test/)
t_eq "curl https allowed" "hello over tls" "$out"
out=$(curl -s -m 5 --cacert "$CA" -w ' %{http_code}' https://evil.test/x)
t_contains "curl https blocked: 403 JSON" "$out" '"error": "blocked_by_network_allowlist", "host": "evil.test", "path": "/x"'
t_contains "curl https blocked: 403" "$out" " 403"
grep -q '^allowed GET https://nginx.test/ -> 200$' "$T_DIR/net.log"; t_check "https allowed line" test $? -eq 0
grep -q '^BLOCKED GET https://evil.test/x -> 403$' "$T_DIR/net.log"; t_check "https blocked line" test $? -eq 0
out=$(curl -s -m 5 --cacert "$CA" https://nginx.test/echo)
t_eq "upstream got SNI = host" "host=nginx.test sni=nginx.test" "$out"
out=$(CURL_CA_BUNDLE="$CA" curl -s -m 5 -w '%{http_version}' -o /dev/null --http2 https://nginx.test/)
t_eq "curl offering h2,http/1.1 is served HTTP/1.1" "1.1" "$out"

# --- Python requests, Node fetch, git ---
out=$(REQUESTS_CA_BUNDLE="$CA" /usr/bin/python3 -c '
import requests
a = requests.get("https://nginx.test/", timeout=5)
b = requests.get("https://evil.test/", timeout=5)
print(a.status_code, a.text.strip(), b.status_code, b.json()["error"])')
t_eq "python requests over TLS" "200 hello over tls 403 blocked_by_network_allowlist" "$out"
if command -v node >/dev/null; then
    out=$(NODE_EXTRA_CA_CERTS="$CA" node -e '
(async () => {
  const a = await fetch("https://nginx.test/"); const b = await fetch("https://evil.test/");
  console.log(a.status, (await a.text()).trim(), b.status, (await b.json()).error);
})().catch(e => { console.log("error", e.cause ? e.cause.code : e.message); });')
    t_eq "node fetch over TLS" "200 hello over tls 403 blocked_by_network_allowlist" "$out"
else
    t_fail "node is not installed"
fi
GIT_SSL_CAINFO="$CA" git clone -q https://git.test/repo.git "$T_DIR/clone" 2> "$T_DIR/git.err"
t_eq "git clone over TLS" "hi" "$(cat "$T_DIR/clone/f" 2>/dev/null)"
GIT_SSL_CAINFO="$CA" git clone -q https://evil.test/repo.git "$T_DIR/clone2" 2> "$T_DIR/git2.err"
t_contains "git clone of a blocked host fails with 403" "$(cat "$T_DIR/git2.err")" "403"

# --- ALPN: a client offering only h2 ---
out=$(timeout 10 /usr/bin/python3 - "$CA" <<'PYX'
import socket, ssl, sys
ctx = ssl.create_default_context(cafile=sys.argv[1])
ctx.set_alpn_protocols(["h2"])
s = ctx.wrap_socket(socket.create_connection(("nginx.test", 443), timeout=5), server_hostname="nginx.test")
alpn = s.selected_alpn_protocol()
s.sendall(b"GET / HTTP/1.1\r\nHost: nginx.test\r\nConnection: close\r\n\r\n")
data = b""
while True:
    d = s.recv(65536)
    if not d: break
    data += d
print(alpn, data.split(b"\r\n")[0].decode())
PYX
)
t_eq "h2-only ALPN: no protocol selected, HTTP/1.1 served" "None HTTP/1.1 200 OK" "$out"

# --- SNI / Host mismatch ---
out=$(curl -s -m 5 --cacert "$CA" -H 'Host: evil.test' https://nginx.test/)
t_contains "SNI/Host mismatch: 403" "$out" '"host": "evil.test", "sni": "nginx.test"'
grep -q '^BLOCKED GET https://evil.test/ -> 403 (host mismatch: header=evil.test, sni=nginx.test)$' "$T_DIR/net.log"
t_check "SNI/Host mismatch line" test $? -eq 0
out=$(curl -s -m 5 --cacert "$CA" -H 'Host: NGINX.test.:443' https://nginx.test/)
t_eq "Host differing from SNI only by case, trailing dot and port is fine" "hello over tls" "$out"

# --- no SNI: a certificate for the proxy IP, routing by Host ---
out=$(curl -s -m 5 --cacert "$CA" -H 'Host: nginx.test' https://127.0.0.1/)
t_eq "no SNI: served by Host" "hello over tls" "$out"

# --- TLS on port 80 is sniffed ---
out=$(curl -s -m 5 --cacert "$CA" --connect-to nginx.test:443:127.0.0.1:80 https://nginx.test/)
t_eq "TLS on port 80" "hello over tls" "$out"

# --- upstream verification failures ---
out=$(curl -s -m 10 --cacert "$CA" -w ' %{http_code}' https://bad.test/)
t_contains "untrusted upstream: 502" "$out" " 502"
grep -q '^ERROR GET https://bad.test/ -> .*certificate verify failed' "$T_DIR/net.log"
t_check "untrusted upstream: ERROR line names the reason" test $? -eq 0
out=$(curl -s -m 10 --cacert "$CA" -w ' %{http_code}' https://wrong.test/)
t_contains "wrong-name upstream: 502" "$out" " 502"
grep -q '^ERROR GET https://wrong.test/ -> .*certificate verify failed' "$T_DIR/net.log"
t_check "wrong-name upstream: ERROR line" test $? -eq 0

# --- WebSocket over TLS ---
out=$(timeout 10 "$PY" "$HERE/ws.py" client wss://ws.test/chat "$CA" hello)
t_eq "WebSocket over TLS relayed" "echo: hello" "$out"
grep -q '^allowed GET https://ws.test/chat -> 101$' "$T_DIR/net.log"; t_check "WebSocket line" test $? -eq 0
out=$(timeout 10 "$PY" "$HERE/ws.py" client wss://evil.test/chat "$CA" hello)
t_eq "WebSocket to a blocked host: 403" "HTTP/1.1 403 Forbidden" "$out"

# --- session resumption ---
rm -f "$T_DIR/sess"
echo | openssl s_client -connect 127.0.0.1:443 -servername nginx.test -CAfile "$CA" \
    -sess_out "$T_DIR/sess" -tls1_2 > /dev/null 2>&1
out=$(echo | openssl s_client -connect 127.0.0.1:443 -servername nginx.test -CAfile "$CA" \
    -sess_in "$T_DIR/sess" -tls1_2 2>/dev/null | grep -E '^(Reused|New),' | head -1)
t_contains "TLS 1.2 session resumption" "$out" "Reused"
out=$(echo | openssl s_client -connect 127.0.0.1:443 -servername nginx.test -CAfile "$CA" -tls1_3 2>/dev/null | grep -E 'Protocol *:|Verify return code' | tr -s ' ' | tr '\n' ' ')
t_contains "TLS 1.3 handshake verifies" "$out" "Verify return code: 0 (ok)"

# --- stalled handshake and garbage ---
out=$(timeout 10 /usr/bin/python3 -c '
import socket, time
s = socket.create_connection(("127.0.0.1", 443)); s.sendall(b"\x16\x03\x01\x02\x00\x01")
t0 = time.time(); s.settimeout(8)
try:
    d = s.recv(100)
except Exception as e:
    d = b"?"
print("dropped" if d == b"" and time.time() - t0 < 5 else "kept %r" % d)')
t_eq "stalled handshake dropped after the timeout" "dropped" "$out"
out=$(printf 'GET / HTTP/1.1\r\nHost: nginx.test\r\n\r\n' | "$PY" "$HERE/raw.py" 127.0.0.1 443)
t_eq "plain HTTP on 443 closes cleanly" "<EOF>" "$out"
head -c 3000 /dev/urandom > "$T_DIR/garbage"
out=$("$PY" "$HERE/raw.py" 127.0.0.1 443 < "$T_DIR/garbage" | tail -c 5)
case "$out" in *"<EOF>"*|*"SET>"*) t_ok "random bytes on 443 close cleanly" ;; *) t_fail "garbage: $out" ;; esac
kill -0 "$AIRLOCK_PID"; t_check "airlock still running" test $? -eq 0

t_stop_airlock; t_eq "SIGTERM: exit 0" "0" "$?"
t_done
