#!/bin/bash
# The upstream leg of HTTP/2 (issue 16): airlock offers h2 and http/1.1 to TLS upstreams and
# speaks what they pick. HTTP/1.1 clients (curl --http1.1, a Python client for chunked bodies
# with trailers) reach an h2-only upstream (h2_upstream.py, ALPN h2 alone): Content-Length and
# chunked request bodies go out as DATA with trailing HEADERS; an answer of unknown length
# comes back chunked with its trailers; concurrent requests to one host share one connection
# as streams, two hosts never share one; an RST_STREAM fails its request alone (502, an ERROR
# line); nginx speaking http/1.1 alone still works; the log lines keep their format.
#
# Addresses in the test's own namespace: airlock 127.0.0.1; h2_upstream.py on 127.0.0.3
# (a.test, b.test :443); nginx on 127.0.0.2 (h1.test :443, no h2) and 127.0.0.4 (h2n.test
# :443, h2 and http/1.1).
. "$(dirname "$0")/lib.sh"
t_enter_netns "$@"
HERE=$(cd "$(dirname "$0")" && pwd)
"$PY" -c 'import h2.connection' 2>/dev/null ||
    t_skip package "needs python3-h2 for the h2-only upstream (apt-get install python3-h2)"
ip addr add 127.0.0.3/8 dev lo 2>/dev/null || true
ip addr add 127.0.0.4/8 dev lo 2>/dev/null || true
printf 'domains: ["a.test", "b.test", "h1.test", "h1b.test", "h2n.test", "down.test"]\n' \
    > "$T_DIR/allow.yaml"
t_start_resolver --address=/a.test/127.0.0.3 --address=/b.test/127.0.0.3 \
    --address=/h1.test/127.0.0.2 --address=/h1b.test/127.0.0.2 --address=/h2n.test/127.0.0.4 \
    --address=/down.test/127.0.0.5 || exit 1
t_upstream_ca
t_upstream_cert "DNS:a.test,DNS:b.test" "$T_DIR/up"
t_upstream_cert "DNS:h1.test,DNS:h1b.test,DNS:h2n.test" "$T_DIR/h1"
UPLOG=$T_DIR/up.log
: > "$UPLOG"
"$PY" "$HERE/h2_upstream.py" server 127.0.0.3 443 "$T_DIR/up.pem" "$T_DIR/up.key" "$UPLOG" \
    > "$T_DIR/up.err" 2>&1 &
T_PIDS+=($!)
t_wait_port 127.0.0.3 443 || exit 1
t_start_nginx "listen 127.0.0.2:443 ssl; listen 127.0.0.4:443 ssl http2;
        ssl_certificate $T_DIR/h1.pem; ssl_certificate_key $T_DIR/h1.key;" || exit 1
echo "from nginx" > "$T_DIR/www/index.html"
# one loop: the upstream connections counted below are one loop's pool (each loop has its own)
t_start_airlock "$T_DIR/allow.yaml" --workers 1 --upstream-ca "$T_DIR/upca.pem" \
    --allow-upstream-cidr 127.0.0.3/32 --allow-upstream-cidr 127.0.0.4/32 \
    --allow-upstream-cidr 127.0.0.5/32 \
    --upstream-timeout 10 || exit 1
CA="$T_DIR/confdir/mitmproxy-ca-cert.pem"
C=(curl -sS -m 20 --http1.1 --cacert "$CA")
conns() { grep '^conn ' "$UPLOG" | tail -1 | awk '{print $2}'; } # the last connection's number

# GET: the upstream's h2 answer reaches the HTTP/1.1 client
out=$("${C[@]}" -w ' %{http_code} %{http_version}' https://a.test/get)
t_contains "GET to an h2-only upstream" "$out" "hello a.test conn "
t_contains "... 200 over HTTP/1.1 to the client" "$out" " 200 1.1"
t_logged "... its log line, in today's format" '^allowed GET https://a\.test/get -> 200$'
grep -qE '^stream [0-9]+ 1 a\.test GET /get$' "$UPLOG"
t_check "... the upstream saw :authority a.test, GET /get on stream 1" test $? -eq 0

# POST with Content-Length
out=$("${C[@]}" --data-binary 'hello world' https://a.test/echo)
t_eq "POST with Content-Length: the body arrives as DATA" "got 11 trailers=" "$out"
t_logged "... logged" '^allowed POST https://a\.test/echo -> 200$'

# a chunked POST with trailers: DATA, then trailing HEADERS
out=$(timeout 20 "$PY" "$HERE/h2_upstream.py" chunked 127.0.0.1 443 a.test /echo "$CA")
t_contains "chunked POST with trailers: the body arrives" "$out" "got 11 trailers="
t_contains "... and its trailer, as trailing HEADERS" "$out" "trailers=x-sum=42;"

# an answer of unknown length with trailers: chunked toward the HTTP/1.1 client
out=$(timeout 20 "$PY" "$HERE/h2_upstream.py" get 127.0.0.1 443 a.test /trailers "$CA" | tr -d '\r')
t_contains "unknown-length answer: chunked to the HTTP/1 client" "$out" "Transfer-Encoding: chunked"
t_contains "... its bytes in chunks" "$out" "part one, "
t_contains "... its trailers in the last chunk" "$out" "x-checksum: abc"
t_contains "... all of them" "$out" "grpc-status: 0"
n=$(printf '%s\n' "$out" | grep -ci '^transfer-encoding:')
t_eq "... one Transfer-Encoding field" "1" "$n"
out=$("${C[@]}" --raw https://a.test/trailers | tr -d '\r')
t_contains "... curl reads the chunked body" "$out" "part one, "

# large bodies both ways, through the per-stream windows; a slow client pauses its stream
N=6000000
"$PY" -c "import sys; p=b'0123456789abcdef'*4096; sys.stdout.buffer.write((p*($N//len(p)+1))[:$N])" > "$T_DIR/big.ref"
"${C[@]}" -o "$T_DIR/big.out" "https://a.test/big?n=$N"
t_check "a 6 MB answer arrives whole" cmp -s "$T_DIR/big.ref" "$T_DIR/big.out"
# 40 MB read at 20 MB/s: more than the socket buffers hold, so airlock pauses the stream
M=40000000
"$PY" -c "import sys; p=b'0123456789abcdef'*4096; sys.stdout.buffer.write((p*($M//len(p)+1))[:$M])" > "$T_DIR/big40.ref"
"${C[@]}" -m 60 --limit-rate 20M -o "$T_DIR/big2.out" "https://a.test/big?n=$M" &
slow=$!
until_ok 'grep -q "GET /big?n=$M" "$UPLOG"' 20
out=$("${C[@]}" https://a.test/get)
t_contains "... a request beside a paused 40 MB download completes" "$out" "hello a.test"
wait $slow
t_check "... the slow download arrives whole" cmp -s "$T_DIR/big40.ref" "$T_DIR/big2.out"
rm -f "$T_DIR/big40.ref" "$T_DIR/big2.out"
out=$("${C[@]}" --data-binary @"$T_DIR/big.ref" https://a.test/echo)
t_eq "a 6 MB upload with Content-Length arrives whole" "got $N trailers=" "$out"
out=$("${C[@]}" -H 'Transfer-Encoding: chunked' --data-binary @"$T_DIR/big.ref" https://a.test/echo)
t_eq "... and chunked" "got $N trailers=" "$out"

# 20 concurrent requests to one host: one connection, 20 streams
c0=$(conns)
urls=()
for i in $(seq 1 20); do urls+=("https://b.test/slow?ms=700&i=$i"); done
out=$("${C[@]}" --parallel --parallel-max 20 -w '\n%{http_code}\n' "${urls[@]}" 2>/dev/null)
t_eq "20 concurrent requests to b.test: all 200" "20" "$(printf '%s\n' "$out" | grep -c '^200$')"
nb=$(grep -E '^stream [0-9]+ [0-9]+ b\.test GET /slow' "$UPLOG" | awk '{print $2}' | sort -u | wc -l)
t_eq "... over one upstream connection" "1" "$nb"
ns=$(grep -cE '^stream [0-9]+ [0-9]+ b\.test GET /slow' "$UPLOG")
t_eq "... as 20 streams" "20" "$ns"
t_eq "... a connection of its own (a.test's is not b.test's)" "$((c0 + 1))" "$(conns)"

# two hosts never share a connection: every connection carries one authority
mixed=$(grep '^stream ' "$UPLOG" | awk '{print $2, $4}' | sort -u | awk '{print $1}' | uniq -d)
t_eq "no upstream connection carried two hosts" "" "$mixed"

# an upstream RST_STREAM fails that request alone
urls=()
for i in $(seq 1 5); do urls+=("https://a.test/slow?ms=500&i=$i"); done
out=$("${C[@]}" --parallel --parallel-max 10 -w '\n%{http_code} %{url_effective}\n' \
    "${urls[@]}" https://a.test/rst 2>/dev/null)
t_contains "RST_STREAM: that request gets 502" "$out" "502 https://a.test/rst"
t_eq "... the others on the same connection complete" "5" "$(printf '%s\n' "$out" | grep -c '^200 ')"
t_logged "... an ERROR line naming the reset" '^ERROR GET https://a\.test/rst -> .*reset the stream'
out=$("${C[@]}" -w ' %{http_code}' https://a.test/rst-late 2>&1)
case "$out" in
    *" 200"*) t_ok "a reset after the head: the client's answer is cut ($out)" ;;
    *) t_ok "a reset after the head: the request fails ($out)" ;;
esac
t_logged "... logged as an ERROR" '^ERROR GET https://a\.test/rst-late -> .*reset the stream'
out=$("${C[@]}" https://a.test/get)
t_contains "the connection goes on after resets" "$out" "hello a.test"

# an upstream that speaks http/1.1 alone (nginx without h2)
out=$("${C[@]}" -w ' %{http_code}' https://h1.test/)
t_eq "nginx (http/1.1 alone) still works" "from nginx 200" "$(printf '%s' "$out" | tr '\n' ' ' | sed 's/  */ /g')"
out=$("${C[@]}" --data-binary 'x=1' -w ' %{http_code}' https://h1.test/echo)
t_contains "... a POST to it too" "$out" "method=POST"
out=$(timeout 20 "$PY" "$HERE/h2_upstream.py" chunked 127.0.0.1 443 h1.test /echo "$CA")
t_contains "... and a chunked POST" "$out" "method=POST"
t_logged "... logged" '^allowed GET https://h1\.test/ -> 200$'
# a burst to an http/1.1 upstream not seen before: the requests that waited for the first
# connection to tell h2 or not each get their own
urls=()
for i in $(seq 1 10); do urls+=("https://h1b.test/?i=$i"); done
out=$("${C[@]}" --parallel --parallel-max 10 -w '\n%{http_code}\n' "${urls[@]}" 2>/dev/null)
t_eq "a burst of 10 to a new http/1.1 upstream: all 200" "10" "$(printf '%s\n' "$out" | grep -c '^200$')"
# a burst to a host that refuses connections: every request fails with the dial's reason
urls=()
for i in $(seq 1 5); do urls+=("https://down.test/?i=$i"); done
out=$("${C[@]}" --parallel --parallel-max 5 -w '\n%{http_code}\n' "${urls[@]}" 2>/dev/null)
t_eq "a burst of 5 to a refusing upstream: all 502" "5" "$(printf '%s\n' "$out" | grep -c '^502$')"
until_ok '[ "$(grep -c "^ERROR GET https://down\.test/?i=[0-9]* -> Connection failed: connection refused$" "$T_DIR/net.log")" -eq 5 ]' 20
t_check "... five ERROR lines with the reason" test $? -eq 0

# a client that gives up: its stream is cancelled (RST_STREAM CANCEL), the connection goes on
curl -sS --http1.1 --cacert "$CA" -m 1 --limit-rate 1M -o /dev/null \
    "https://a.test/big?n=$M&gone=1" 2>/dev/null
sid=$(grep -E "^stream [0-9]+ [0-9]+ a\\.test GET /big\\?n=$M&gone=1\$" "$UPLOG" | awk '{print $2, $3}')
until_ok 'grep -q "^reset $sid 8$" "$UPLOG"' 20
t_check "a client that gives up: its stream is reset with CANCEL upstream ($sid)" test $? -eq 0
out=$("${C[@]}" https://a.test/get)
t_contains "... the connection goes on" "$out" "hello a.test"

# a GOAWAY: the stale connection is given to no new request
c0=$(conns)
out=$("${C[@]}" https://a.test/goaway)
t_eq "an answer followed by GOAWAY" "bye" "$out"
out=$("${C[@]}" https://a.test/get)
t_contains "... the next request goes over a new connection" "$out" "hello a.test conn $((c0 + 1))"
t_eq "... one new connection" "$((c0 + 1))" "$(conns)"

# a GOAWAY that leaves a request unprocessed: a request without a body goes once more on a new
# connection; one with a body fails with the reason
c0=$(conns)
out=$("${C[@]}" -w ' %{http_code}' https://a.test/refuse)
t_contains "GET refused by a GOAWAY: retried once, then 502" "$out" " 502"
t_eq "... the upstream saw it on two connections" "2" "$(grep -cE '^stream [0-9]+ [0-9]+ a\.test GET /refuse$' "$UPLOG")"
t_logged "... ERROR line naming the GOAWAY" '^ERROR GET https://a\.test/refuse -> .*GOAWAY'
out=$("${C[@]}" -w ' %{http_code}' --data-binary 'x=1' https://a.test/refuse)
t_contains "POST refused by a GOAWAY: 502 at once" "$out" " 502"
t_logged "... ERROR line" '^ERROR POST https://a\.test/refuse -> upstream sent GOAWAY before this request was processed$'
# the connection ends under a request: that request fails, the next gets a new connection
out=$("${C[@]}" -w ' %{http_code}' https://a.test/close)
t_contains "the upstream closes under a request: 502" "$out" " 502"
t_logged "... ERROR line" '^ERROR GET https://a\.test/close -> Server disconnected during the HTTP/2 session (connection closed)$'
out=$("${C[@]}" https://a.test/get)
t_contains "... the next request works" "$out" "hello a.test"

# nginx offering h2 and http/1.1: requests go over h2, a WebSocket upgrade over http/1.1
NGLOG=$T_DIR/nginx/access.log
out=$("${C[@]}" https://h2n.test/)
t_eq "nginx with h2: answered" "from nginx" "$out"
until_ok 'grep -q "\"GET / HTTP/2.0\"" "$NGLOG"' 20
t_check "... the request reached nginx over HTTP/2" test $? -eq 0
out=$("${C[@]}" -o /dev/null -w '%{http_code}' -H 'Connection: Upgrade' -H 'Upgrade: websocket' \
    -H 'Sec-WebSocket-Version: 13' -H 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==' \
    https://h2n.test/ws 2>/dev/null)
until_ok 'grep -q "\"GET /ws HTTP/1.1\"" "$NGLOG"' 20
t_check "a WebSocket upgrade to it goes over http/1.1, never h2 (answer $out)" test $? -eq 0
grep -q '"GET /ws HTTP/2.0"' "$NGLOG"
t_check "... and never over HTTP/2" test $? -ne 0

t_check "airlock is still running" kill -0 "$AIRLOCK_PID"
# SIGTERM with an h2 connection pooled and one carrying a stream
"${C[@]}" -o /dev/null "https://b.test/slow?ms=3000" 2>/dev/null &
until_ok 'grep -q "GET /slow?ms=3000" "$UPLOG"' 20
t0=$SECONDS
t_stop_airlock
t_eq "SIGTERM with h2 connections open: exit 0" "0" "$?"
t_check "... without waiting for the pool's idle timeout" test $((SECONDS - t0)) -lt 30
t_done
