#!/bin/bash
# Issue 4: TLS interception through real clients (curl, Python requests, Node fetch, git,
# openssl s_client) against nginx with a test CA, in a private network namespace.
. "$(dirname "$0")/lib.sh"
t_enter_netns "$@"
HERE=$(cd "$(dirname "$0")" && pwd)

cat > "$T_DIR/allow.yaml" <<'YAML'
domains: ["nginx.test", "git.test", "bad.test", "wrong.test", "ws.test",
          "res13.test", "res13b.test", "res12.test", "res12b.test", "flip13.test", "flip12.test"]
url_prefixes:
  - host: api.test
    path: /v1/*
    methods: [GET]
YAML
ip addr add 127.0.0.3/8 dev lo 2>/dev/null || true
ip addr add 127.0.0.4/8 dev lo 2>/dev/null || true # upstream session resumption, TLS 1.3 only
ip addr add 127.0.0.5/8 dev lo 2>/dev/null || true # ... TLS 1.2 only
t_start_resolver --address=/ws.test/127.0.0.3 \
    --address=/res13.test/127.0.0.4 --address=/res13b.test/127.0.0.4 \
    --address=/flip13.test/127.0.0.4 --address=/res12.test/127.0.0.5 \
    --address=/res12b.test/127.0.0.5 --address=/flip12.test/127.0.0.5
t_upstream_ca
t_upstream_cert "DNS:nginx.test,DNS:git.test,DNS:api.test,DNS:other.test" "$T_DIR/good"
t_upstream_cert "DNS:bad.test" "$T_DIR/bad" self
t_upstream_cert "DNS:ws.test" "$T_DIR/ws"
t_upstream_cert "DNS:res13.test,DNS:res13b.test,DNS:res12.test,DNS:res12b.test" "$T_DIR/res"
# flip.*: trusted now, replaced by the self-signed flipbad.* later
t_upstream_cert "DNS:flip13.test,DNS:flip12.test" "$T_DIR/flipgood"
t_upstream_cert "DNS:flip13.test,DNS:flip12.test" "$T_DIR/flipbad" self
cp "$T_DIR/flipgood.pem" "$T_DIR/flip.pem" && cp "$T_DIR/flipgood.key" "$T_DIR/flip.key"
# the resumption servers' ticket key: a file, so a reload can change it for certain (nginx may
# otherwise carry its keys over a reload, and the old tickets would still be accepted)
openssl rand 80 > "$T_DIR/ticket.key"
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
    }
    # upstream session resumption: every response closes the connection (keepalive_timeout 0),
    # so each request through airlock is a new upstream handshake; the log says whether nginx
    # resumed it ('r') or not ('.')
    log_format resume '\$ssl_server_name \$ssl_protocol \$ssl_session_reused';
    server {
        listen 127.0.0.4:443 ssl;
        ssl_protocols TLSv1.3;
        ssl_certificate $T_DIR/res.pem; ssl_certificate_key $T_DIR/res.key;
        server_name res13.test res13b.test;
        keepalive_timeout 0;
        ssl_session_ticket_key $T_DIR/ticket.key;
        access_log $T_DIR/nginx/resume.log resume;
        root $T_DIR/www;
    }
    server {
        listen 127.0.0.5:443 ssl;
        ssl_protocols TLSv1.2;
        ssl_certificate $T_DIR/res.pem; ssl_certificate_key $T_DIR/res.key;
        server_name res12.test res12b.test;
        keepalive_timeout 0;
        ssl_session_ticket_key $T_DIR/ticket.key;
        access_log $T_DIR/nginx/resume.log resume;
        root $T_DIR/www;
    }
    server {
        listen 127.0.0.4:443 ssl;
        ssl_protocols TLSv1.3;
        ssl_certificate $T_DIR/flip.pem; ssl_certificate_key $T_DIR/flip.key;
        server_name flip13.test;
        keepalive_timeout 0;
        ssl_session_ticket_key $T_DIR/ticket.key;
        access_log $T_DIR/nginx/resume.log resume;
        root $T_DIR/www;
    }
    server {
        listen 127.0.0.5:443 ssl;
        ssl_protocols TLSv1.2;
        ssl_certificate $T_DIR/flip.pem; ssl_certificate_key $T_DIR/flip.key;
        server_name flip12.test;
        keepalive_timeout 0;
        ssl_session_ticket_key $T_DIR/ticket.key;
        access_log $T_DIR/nginx/resume.log resume;
        root $T_DIR/www;
" || exit 1
"$PY" "$HERE/ws.py" server 127.0.0.3 443 "$T_DIR/ws.pem" "$T_DIR/ws.key" > /dev/null 2>&1 &
T_PIDS+=($!)
t_wait_port 127.0.0.3 443
t_start_airlock "$T_DIR/allow.yaml" --upstream-ca "$T_DIR/upca.pem" \
    --allow-upstream-cidr 127.0.0.3/32 --allow-upstream-cidr 127.0.0.4/32 \
    --allow-upstream-cidr 127.0.0.5/32 --handshake-timeout 1 || exit 1
CA="$T_DIR/confdir/mitmproxy-ca-cert.pem"
t_check "airlock wrote its CA" test -s "$CA"

# --- curl ---
out=$(curl -s -m 5 --cacert "$CA" https://nginx.test/)
t_eq "curl https allowed" "hello over tls" "$out"
out=$(curl -s -m 5 --cacert "$CA" -w ' %{http_code}' https://evil.test/x)
t_contains "curl https blocked: 403 JSON" "$out" '"error": "blocked_by_network_allowlist", "host": "evil.test", "path": "/x"'
t_contains "curl https blocked: 403" "$out" " 403"
t_logged "https allowed line" '^allowed GET https://nginx.test/ -> 200$'
t_logged "https blocked line" '^BLOCKED GET https://evil.test/x -> 403$'
out=$(curl -s -m 5 --cacert "$CA" https://nginx.test/echo)
t_eq "upstream got SNI = host" "host=nginx.test sni=nginx.test" "$out"
out=$(CURL_CA_BUNDLE="$CA" curl -s -m 5 -w '%{http_version}' -o /dev/null --http2 https://nginx.test/)
t_eq "curl offering h2,http/1.1 is served HTTP/2" "2" "$out"
out=$(CURL_CA_BUNDLE="$CA" curl -s -m 5 -w '%{http_version}' -o /dev/null --http1.1 https://nginx.test/)
t_eq "curl offering only http/1.1 is served HTTP/1.1" "1.1" "$out"

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

# --- ALPN: a client offering only h2 gets h2 (HTTP/1.1 bytes on it are not a request) ---
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
t_eq "h2-only ALPN: h2 selected; HTTP/1.1 bytes get no HTTP/1.1 answer" "h2 " "${out:0:3}"
case "$out" in *"HTTP/1.1 200"*) t_fail "h2-only ALPN: an HTTP/1.1 request was served" ;; esac

# --- SNI / Host mismatch ---
out=$(curl -s -m 5 --cacert "$CA" -H 'Host: evil.test' https://nginx.test/)
t_contains "SNI/Host mismatch: 403" "$out" '"host": "evil.test", "sni": "nginx.test"'
t_logged "SNI/Host mismatch line" \
    '^BLOCKED GET https://evil.test/ -> 403 (host mismatch: header=evil.test, sni=nginx.test)$'
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
t_logged "untrusted upstream: ERROR line names the reason" \
    '^ERROR GET https://bad.test/ -> .*certificate verify failed'
out=$(curl -s -m 10 --cacert "$CA" -w ' %{http_code}' https://wrong.test/)
t_contains "wrong-name upstream: 502" "$out" " 502"
t_logged "wrong-name upstream: ERROR line" '^ERROR GET https://wrong.test/ -> .*certificate verify failed'

# --- WebSocket over TLS ---
out=$(timeout 10 "$PY" "$HERE/ws.py" client wss://ws.test/chat "$CA" hello)
t_eq "WebSocket over TLS relayed" "echo: hello" "$out"
t_logged "WebSocket line" '^allowed GET https://ws.test/chat -> 101$'
out=$(timeout 10 "$PY" "$HERE/ws.py" client wss://evil.test/chat "$CA" hello)
t_eq "WebSocket to a blocked host: 403" "HTTP/1.1 403 Forbidden" "$out"

# --- session resumption ---
rm -f "$T_DIR/sess"
echo | openssl s_client -connect 127.0.0.1:443 -servername nginx.test -CAfile "$CA" \
    -sess_out "$T_DIR/sess" -tls1_2 > /dev/null 2>&1
out=$(echo | openssl s_client -connect 127.0.0.1:443 -servername nginx.test -CAfile "$CA" \
    -sess_in "$T_DIR/sess" -tls1_2 2>/dev/null | grep -aE '^(Reused|New),' | head -1)
t_contains "TLS 1.2 session resumption" "$out" "Reused"
# TLS 1.3: the tickets come after the handshake, so the first client reads a whole answer
# (HTTP/1.0: airlock closes after it) before it saves its session
rm -f "$T_DIR/sess13"
printf 'GET / HTTP/1.0\r\nHost: nginx.test\r\n\r\n' |
    timeout 20 openssl s_client -connect 127.0.0.1:443 -servername nginx.test -CAfile "$CA" \
        -sess_out "$T_DIR/sess13" -tls1_3 -ign_eof > /dev/null 2>&1
out=$(echo | openssl s_client -connect 127.0.0.1:443 -servername nginx.test -CAfile "$CA" \
    -sess_in "$T_DIR/sess13" -tls1_3 2>/dev/null | grep -aE '^(Reused|New),' | head -1)
t_contains "TLS 1.3 session resumption" "$out" "Reused"
out=$(echo | openssl s_client -connect 127.0.0.1:443 -servername nginx.test -CAfile "$CA" -tls1_3 2>/dev/null | grep -aE 'Protocol *:|Verify return code' | tr -s ' ' | tr '\n' ' ')
t_contains "TLS 1.3 handshake verifies" "$out" "Verify return code: 0 (ok)"

# --- upstream session resumption (airlock as the TLS client) ---
# nginx on 127.0.0.4 (TLS 1.3 only) and 127.0.0.5 (TLS 1.2 only) closes every connection after
# one response, so each request is a new upstream handshake; its log says 'r' when resumed.
# res_get NAME: one request through airlock; prints the status and nginx's log line for it
# ("SNI PROTOCOL REUSED"), or the status and "-" when nothing reached the upstream.
RLOG="$T_DIR/nginx/resume.log"
res_get() {
    local before code i
    before=$(wc -l < "$RLOG")
    code=$(curl -s -m 10 --cacert "$CA" -o /dev/null -w '%{http_code}' "https://$1/")
    # a 200 has its upstream line (waited for, up to 20 s); after a failure a line is only
    # looked for a moment (none is expected)
    for i in $(seq 1 400); do
        [ "$(wc -l < "$RLOG")" -gt "$before" ] && break
        [ "$code" != 200 ] && [ "$i" -gt 4 ] && break
        sleep 0.05
    done
    if [ "$(wc -l < "$RLOG")" -gt "$before" ]; then
        echo "$code $(tail -1 "$RLOG")"
    else
        echo "$code -"
    fi
}
res_seq() { local n; for n in "$@"; do res_get "$n"; done | paste -sd '|'; }
# control: two names in one nginx server block share its ticket keys, and nginx resumes a
# session offered under the other name (openssl s_client), so a session airlock leaked from one
# name to the other would show as 'r' in (2)
for v in 3:127.0.0.4 2:127.0.0.5; do
    ip=${v#*:} v=${v%%:*}
    for i in 1 2 3 4 5; do # stdin open a moment: TLS 1.3 tickets come after the handshake
        rm -f "$T_DIR/sess1$v"
        sleep 0.3 | openssl s_client -connect "$ip:443" -servername "res1$v.test" -tls1_$v \
            -CAfile "$T_DIR/upca.pem" -sess_out "$T_DIR/sess1$v" > /dev/null 2>&1
        ctl=$(echo | openssl s_client -connect "$ip:443" -servername "res1${v}b.test" -tls1_$v \
            -CAfile "$T_DIR/upca.pem" -sess_in "$T_DIR/sess1$v" 2>/dev/null |
            grep -E '^(Reused|New),' | head -1)
        case $ctl in Reused*) break ;; esac
    done
    t_contains "control: nginx resumes a TLS 1.$v session offered for another name" "$ctl" "Reused"
done
for v in 3 2; do
    a=res1$v.test b=res1${v}b.test p=TLSv1.$v
    # (1) no pooled connection in between: the second handshake resumes the first's session,
    # the third the ticket/session the second left (a TLS 1.3 ticket is used once)
    out=$(res_seq $a $a $a)
    t_eq "TLS 1.$v upstream: the later handshakes are resumed" \
        "200 $a $p .|200 $a $p r|200 $a $p r" "$out"
    # (2) right after: another name on the same IP:port is not offered the first name's
    # session; it then resumes its own, and the first name still has its own
    out=$(res_seq $b $b $a)
    t_eq "TLS 1.$v upstream: another name on the same IP:port starts a full handshake" \
        "200 $b $p .|200 $b $p r|200 $a $p r" "$out"
done
# (3) the certificate changes to an untrusted one between requests: nginx reloads (with new ticket
# keys, which it is given in a file), refuses the session airlock offers, sends the new certificate, verification rejects it
# served_cn NAME IP: the CN of the certificate the upstream presents now
served_cn() {
    echo | openssl s_client -connect "$2:443" -servername "$1" 2>/dev/null |
        openssl x509 -noout -subject 2>/dev/null | sed 's/.*CN *= *//'
}
reload_flip() { # reload_flip good|bad: swap the certificate, reload nginx, wait until served
    local want=upstream i
    [ "$1" = bad ] && want=self
    cp "$T_DIR/flip$1.pem" "$T_DIR/flip.pem" && cp "$T_DIR/flip$1.key" "$T_DIR/flip.key"
    # the old worker keeps accepting (old certificate, old ticket keys) until it exits: wait
    # for that too, not only for the new certificate to show up
    local old p
    old=$(pgrep -P "$(cat "$T_DIR/nginx.pid")")
    openssl rand 80 > "$T_DIR/ticket.key"
    nginx -c "$T_DIR/nginx.conf" -s reload 2>/dev/null
    for i in $(seq 1 300); do
        local alive=0
        for p in $old; do kill -0 "$p" 2>/dev/null && alive=1; done
        [ "$alive" = 0 ] && [ "$(served_cn flip13.test 127.0.0.4)" = "$want" ] &&
            [ "$(served_cn flip12.test 127.0.0.5)" = "$want" ] && return 0
        sleep 0.1
    done
    echo "nginx never served the $1 certificate" >&2
    return 1
}
# log_count REGEX N: lines of net.log matching REGEX, once there are N (the log is written by
# a thread of its own, a moment after the response) or after 20 s
log_count() {
    local i n
    for i in $(seq 1 400); do
        n=$(grep -c "$1" "$T_DIR/net.log")
        [ "$n" -ge "$2" ] && break
        sleep 0.05
    done
    echo "$n"
}
F13="flip13.test TLSv1.3" F12="flip12.test TLSv1.2"
out=$(res_seq flip13.test flip13.test flip12.test flip12.test)
t_eq "flip: sessions remembered while the certificate is trusted" \
    "200 $F13 .|200 $F13 r|200 $F12 .|200 $F12 r" "$out"
reload_flip bad
for name in flip13.test flip12.test; do
    out=$(res_seq "$name" "$name")
    t_eq "flip $name: untrusted now, twice; nothing reaches the upstream" "502 -|502 -" "$out"
    n=$(log_count "^ERROR GET https://$name/ -> Connection failed: certificate verify failed" 2)
    t_eq "flip $name: both ERROR lines say certificate verify failed" "2" "$n"
done
reload_flip good
out=$(res_seq flip13.test flip13.test flip12.test flip12.test)
t_eq "flip: trusted again, a full handshake then resumption" \
    "200 $F13 .|200 $F13 r|200 $F12 .|200 $F12 r" "$out"

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
