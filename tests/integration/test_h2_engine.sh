#!/bin/bash
# HTTP/2 toward the client (issue 16), engine side: every stream is an exchange like an HTTP/1
# request (decided, logged once, answered on its own stream), with an HTTP/1.1 upstream behind:
# a body of unknown length goes up chunked, a 30 MB upload streams through the pauses, a
# blocked stream leaves the connection and its other streams alone, and cleartext HTTP/2 with
# prior knowledge is refused with a GOAWAY (HTTP_1_1_REQUIRED) and one log line.
#
# Addresses in the test's own namespace: airlock 127.0.0.1; nginx (TLS, test CA) on 127.0.0.3.
. "$(dirname "$0")/lib.sh"
t_enter_netns "$@"
HERE=$(cd "$(dirname "$0")" && pwd)
ip addr add 127.0.0.3/8 dev lo 2>/dev/null || true
ip addr add 127.0.0.4/8 dev lo 2>/dev/null || true
printf 'url_prefixes:\n  - host: up.test\n    path: /ok*\n  - host: ws.test\n    path: /chat*\n' \
    > "$T_DIR/allow.yaml"
t_start_resolver --address=/up.test/127.0.0.3 --address=/ws.test/127.0.0.4 || exit 1
t_upstream_ca
t_upstream_cert "DNS:up.test" "$T_DIR/up"
t_upstream_cert "DNS:ws.test" "$T_DIR/ws"
"$PY" "$HERE/ws.py" server 127.0.0.4 443 "$T_DIR/ws.pem" "$T_DIR/ws.key" > /dev/null 2>&1 &
T_PIDS+=($!)
t_wait_port 127.0.0.4 443 || exit 1
mkdir -p "$T_DIR/www" "$T_DIR/ng"
echo hello > "$T_DIR/www/ok"
head -c 3000000 /dev/urandom > "$T_DIR/www/okbig"
cat > "$T_DIR/ng.conf" <<NG
worker_processes 1;
pid $T_DIR/ng.pid;
error_log $T_DIR/ng/error.log;
events {}
http {
    client_max_body_size 0;
    access_log $T_DIR/ng/access.log;
    client_body_temp_path $T_DIR/ng/body;
    proxy_temp_path $T_DIR/ng/proxy;
    server {
        listen 127.0.0.3:443 ssl;
        ssl_certificate $T_DIR/up.pem;
        ssl_certificate_key $T_DIR/up.key;
        root $T_DIR/www;
        location /okecho { return 200 "\$request_method \$request_uri cl=\$http_content_length te=\$http_transfer_encoding\n"; }
        location /okpost { proxy_pass http://127.0.0.3:8080/; }
        location /oksmall { client_max_body_size 1k; proxy_pass http://127.0.0.3:8080/; }
    }
    server {
        listen 127.0.0.3:8080;
        location / { proxy_pass http://127.0.0.3:8081/; }
    }
    server {
        listen 127.0.0.3:8081;
        location / { return 200 "got \$content_length\n"; }
    }
}
NG
nginx -c "$T_DIR/ng.conf" -g 'daemon on;' || exit 1
T_PIDS+=("$(cat "$T_DIR/ng.pid")")
t_start_airlock "$T_DIR/allow.yaml" --upstream-ca "$T_DIR/upca.pem" \
    --allow-upstream-cidr 127.0.0.3/32 --allow-upstream-cidr 127.0.0.4/32 || exit 1
CA="$T_DIR/confdir/mitmproxy-ca-cert.pem"
c2() { curl -sS -m 30 --http2 --cacert "$CA" "$@"; }

out=$(c2 -w ' v%{http_version} %{http_code}' https://up.test/ok)
t_eq "h2: an allowed GET" "hello v2 200" "$(echo $out)"
t_wait_log '^allowed GET https://up\.test/ok -> 200$'
t_check "... one log line, today's format" test $? -eq 0
out=$(c2 -w ' v%{http_version} %{http_code}' https://up.test/blocked)
t_contains "h2: a blocked path gets the 403 JSON on its stream" "$out" '"error": "blocked_by_network_allowlist"'
t_contains "... over HTTP/2" "$out" " v2 403"
t_wait_log '^BLOCKED GET https://up\.test/blocked -> 403$'
t_check "... logged" test $? -eq 0

out=$(c2 -w ' %{http_code}' https://up.test/okecho -d abc)
t_eq "h2: a body with content-length goes up with it" "POST /okecho cl=3 te= 200" "$(echo $out)"
out=$(echo abc | c2 -w ' %{http_code}' -T - https://up.test/okecho)
t_eq "h2: a body of unknown length goes up chunked" "PUT /okecho cl= te=chunked 200" "$(echo $out)"

# several streams on one connection: blocked ones in between leave the others alone
out=$(c2 -w '%{http_version} %{http_code} %{size_download} %{num_connects}\n' -o /dev/null \
    https://up.test/okbig -o /dev/null https://up.test/x -o /dev/null https://up.test/ok \
    -o /dev/null https://up.test/okbig)
t_eq "h2: streams on one connection, one blocked" \
    "2 200 3000000 1 2 403 281 0 2 200 6 0 2 200 3000000 0" "$(echo $out)"

# 30 MB uploads, known and unknown length: the upstream is slower than the client, so the
# exchange pauses the stream's body and its window holds the client
head -c 30000000 /dev/zero > "$T_DIR/big"
out=$(c2 -w ' %{http_code}' -T "$T_DIR/big" https://up.test/okpost)
t_eq "h2: a 30 MB upload with content-length" "got 30000000 200" "$(echo $out)"
out=$(c2 -w ' %{http_code}' -T - https://up.test/okpost < "$T_DIR/big")
t_eq "h2: a 30 MB upload of unknown length" "got 30000000 200" "$(echo $out)"

# an answer before the body ended (nginx refuses a body over 1 KiB at once): the client gets
# it and finishes its stream; the rest of the body is dropped by airlock (no RST_STREAM, which
# curl 7.88 takes for a failure)
out=$(c2 -w ' %{http_code}' -o /dev/null -T "$T_DIR/big" https://up.test/oksmall)
t_eq "h2: an early 413 for a 30 MB upload reaches the client" " 413" "$out"
for i in 1 2 3 4 5 6 7 8 9 10; do
    echo abc | c2 -w '%{http_code}\n' -o /dev/null -T - https://up.test/okecho
done > "$T_DIR/early.out" 2>&1
t_eq "h2: an answer before a short body's end, 10 times: all delivered" 10 "$(grep -c '^200$' "$T_DIR/early.out")"

# many streams over few connections
out=$(h2load -n 2000 -c 2 -m 50 https://up.test/ok 2>&1 | grep -E '^(requests|status codes):')
t_contains "h2load: 2000 requests over 2 connections, 50 streams each" "$out" \
    "2000 done, 2000 succeeded, 0 failed, 0 errored"
nlines() { grep -c '^allowed GET https://up\.test/ok -> 200$' "$T_DIR/net.log"; }
until_ok '[ "$(nlines)" -ge 2002 ]' 20
t_eq "... one log line per stream" 2002 "$(nlines)"

# WebSocket over HTTP/2 (RFC 8441): the extended CONNECT is decided as the GET it stands for
out=$(timeout 15 "$PY" "$HERE/ws_h2.py" ws.test /chat "$CA" hello)
t_eq "h2 WebSocket (extended CONNECT) to an allowed path: 200, relayed" "status=200 echo: hello" \
    "$(echo $out | sed 's/echo=/ /;s/  / /')"
t_logged "... logged as the upgrade" '^allowed GET https://ws\.test/chat -> 101$'
out=$(timeout 15 "$PY" "$HERE/ws_h2.py" ws.test /other "$CA" hello)
t_eq "h2 WebSocket to a blocked path: 403 on the stream" "status=403" "$out"
t_logged "... logged" '^BLOCKED GET https://ws\.test/other -> 403$'
out=$(timeout 15 "$PY" "$HERE/ws_h2.py" ws.test /chat "$CA" hello connect)
t_eq "h2 plain CONNECT: 403 on the stream" "status=403" "$out"

# h2c with prior knowledge on port 80: refused at once with GOAWAY(HTTP_1_1_REQUIRED)
start=$(date +%s%N)
out=$(printf 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\4\0\0\0\0\0' |
    "$PY" "$(dirname "$0")/raw.py" 127.0.0.1 80 | od -An -tx1 | tr -d ' \n')
t_contains "h2c prior knowledge: a GOAWAY with HTTP_1_1_REQUIRED" "$out" "000008070000000000000000000000000d"
curl -s -m 5 --http2-prior-knowledge http://up.test/ok > /dev/null
t_check "... curl fails" test $? -ne 0
t_check "... fast" test $(( ($(date +%s%N) - start) / 1000000 )) -lt 3000
t_wait_log '^BLOCKED - - -> 400 (malformed request: cleartext HTTP/2 (h2c) is refused; use HTTP/1.1 or TLS)$'
t_check "... logged" test $? -eq 0
out=$(curl -sS -m 5 --http2 -w ' v%{http_version}' http://up.test/ok 2>&1)
t_contains "the h2c Upgrade on port 80 is not taken: HTTP/1.1" "$out" " v1.1"
t_done
