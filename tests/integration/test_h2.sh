#!/bin/bash
# HTTP/2 on the client leg (issue 16): real h2 clients (curl --http2, nghttp, Python httpx,
# Node's http2, Go's net/http) through airlock to an allowed host and to a blocked path; h2 on
# the other TLS entry points (explicit-proxy CONNECT, transparent listener, TLS on :80); a
# blocked path and a blocked host on the same connection as allowed streams (nothing reaches
# the blocked upstream); a masked secret replaced on an h2 stream; 100 concurrent streams with
# one never read (the others complete, airlock's RSS bounded); h2c with prior knowledge on
# port 80 refused with GOAWAY(HTTP_1_1_REQUIRED), the h2c Upgrade answered over HTTP/1.1.
# gRPC is test_h2_grpc.sh, the attack and bypass cases test_h2_bypass.sh.
#
# Addresses in the test's own namespace: airlock 127.0.0.1 (:80, :443, explicit proxy :3128,
# transparent :3129 fed by an nftables redirect of 127.0.0.10:443);
# nginx as ok.test on 127.0.0.3 and evil.test on 127.0.0.4 (h2_lib.sh), h2 and http/1.1.
. "$(dirname "$0")/lib.sh"
t_enter_netns "$@"
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/h2_lib.sh"
for p in curl nghttp node go; do
    command -v $p > /dev/null || t_skip package "$p is not installed"
done
"$PY" -c 'import httpx, h2' 2> /dev/null || t_skip package "python3-httpx or python3-h2 is not installed"

REAL="real-cred-0123456789abcdef"
SURR="surrogate-cred-0000000001"
cat > "$T_DIR/allow.yaml" <<'YAML'
url_prefixes:
  - host: ok.test
    path: /api/*
YAML
cat > "$T_DIR/repl.json" <<JSON
{"$SURR": {"value": "$REAL", "scopes": ["ok.test"], "headers": ["X-Cred"]}}
JSON
h2_setup_upstreams || exit 1
# The upstream echoes what it got: answers are not scrubbed here (--scrub-responses off), so
# the echo shows the real value that went upstream; test_scrub.sh covers scrubbing.
t_start_airlock "$T_DIR/allow.yaml" --upstream-ca "$T_DIR/upca.pem" --scrub-responses off \
    --replacements "$T_DIR/repl.json" --listen-proxy 127.0.0.1:3128 \
    --listen-transparent 127.0.0.1:3129 \
    --allow-upstream-cidr 127.0.0.3/32 --allow-upstream-cidr 127.0.0.4/32 || exit 1
CA="$T_DIR/confdir/mitmproxy-ca-cert.pem"
ECHO="uri=/api/echo host=ok.test"

# ---- curl --http2 ----
out=$(curl -sS -m 10 --http2 --cacert "$CA" -w '\n%{http_version} %{http_code}' https://ok.test/api/echo 2>&1)
t_contains "curl --http2: the upstream's answer" "$out" "$ECHO"
t_eq "curl --http2: HTTP/2 negotiated, 200" "2 200" "$(tail -1 <<< "$out")"
t_logged "curl --http2: logged as today" '^allowed GET https://ok\.test/api/echo -> 200$'
out=$(curl -sS -m 10 --http2 --cacert "$CA" -w '\n%{http_version} %{http_code}' https://ok.test/private 2>&1)
t_eq "curl --http2, blocked path: 403 over HTTP/2" "2 403" "$(tail -1 <<< "$out")"
t_contains "... the 403 JSON" "$out" '{"error": "blocked_by_network_allowlist", "host": "ok.test", "path": "/private", "method": "GET"'
t_logged "... logged" '^BLOCKED GET https://ok\.test/private -> 403$'
out=$(curl -sS -m 10 --http2 --cacert "$CA" -H "X-Cred: $SURR" -w '\n%{http_version}' https://ok.test/api/echo 2>&1)
t_contains "curl --http2, masked secret: the upstream got the real value" "$out" "x-cred=$REAL"
t_eq "... over HTTP/2" "2" "$(tail -1 <<< "$out")"
t_logged "... logged [masked: 1]" '^allowed GET https://ok\.test/api/echo -> 200 \[masked: 1\]$'
out=$(curl -sS -m 10 --http2 --cacert "$CA" -x http://127.0.0.1:3128 -w '\n%{http_version} %{http_code}' https://ok.test/api/echo 2>&1)
t_eq "curl --http2 through the explicit proxy's CONNECT: HTTP/2 inside the tunnel" "2 200" "$(tail -1 <<< "$out")"
t_contains "... the upstream's answer" "$out" "$ECHO"

# the other TLS entry points: the transparent listener (an nftables redirect of 127.0.0.10:443,
# as in test_bypass.sh) and TLS sniffed on port 80 (ALPN only: no upstream speaks TLS on 80)
if command -v nft > /dev/null && nft -f - <<'NFT'
table ip h2_nat {
  chain output { type nat hook output priority -100; policy accept;
    ip daddr 127.0.0.10 tcp dport 443 redirect to :3129; }
}
NFT
then
    out=$(curl -sS -m 10 --http2 --cacert "$CA" --resolve ok.test:443:127.0.0.10 \
        -w '\n%{http_version} %{http_code}' https://ok.test/api/echo 2>&1)
    t_eq "curl --http2 through the transparent listener: HTTP/2, 200" "2 200" "$(tail -1 <<< "$out")"
    t_contains "... the upstream's answer" "$out" "$ECHO"
else
    t_not_made "curl --http2 through the transparent listener" "nftables not usable here"
fi
out=$(echo | timeout 10 openssl s_client -connect 127.0.0.1:80 -servername ok.test \
    -alpn h2,http/1.1 2>&1 | grep -a '^ALPN protocol')
t_eq "TLS sniffed on port 80: h2 offered and chosen" "ALPN protocol: h2" "$out"

# ---- nghttp (it does not verify certificates: it has no option for a CA) ----
out=$(timeout 20 nghttp -v https://ok.test/api/echo 2>&1)
t_contains "nghttp: h2 negotiated" "$out" "The negotiated protocol: h2"
t_contains "nghttp: 200" "$out" ":status: 200"
t_contains "nghttp: the upstream's answer" "$out" "$ECHO"
out=$(timeout 20 nghttp -v https://ok.test/private 2>&1)
t_contains "nghttp, blocked path: 403" "$out" ":status: 403"
t_contains "... the 403 JSON" "$out" '"error": "blocked_by_network_allowlist"'

# ---- Python httpx (http2=True), Node http2, Go net/http: both URLs on one connection ----
want_ok="status=200 body=proto=HTTP/1.1 method=GET $ECHO x-cred="
want_ok_h2="status=200 body=proto=HTTP/2.0 method=GET $ECHO x-cred="
want_blk="status=403 body=error:blocked_by_network_allowlist"
check_pair() { # check_pair NAME VERSION OUTPUT
    local first second
    first=$(sed -n 1p <<< "$3")
    second=$(sed -n 2p <<< "$3")
    case "$first" in
        "version=$2 $want_ok" | "version=$2 $want_ok_h2") t_ok "$1: allowed, over HTTP/2 ($first)" ;;
        *) t_fail "$1: allowed: [$3]" ;;
    esac
    t_eq "$1: blocked path, on the same connection" "version=$2 $want_blk" "$second"
}
out=$(timeout 30 "$PY" "$HERE/h2_httpx.py" "$CA" https://ok.test/api/echo https://ok.test/private 2>&1)
check_pair "httpx http2=True" HTTP/2 "$out"
out=$(timeout 30 node "$HERE/h2_client.js" "$CA" https://ok.test /api/echo /private 2>&1)
check_pair "node http2" 2 "$out"
t_contains "node http2: the session closed cleanly" "$out" "session closed"
mkdir -p "$T_DIR/go"
cp "$HERE/h2_client.go" "$T_DIR/go/main.go"
if (cd "$T_DIR/go" && GOCACHE=$T_DIR/gocache GOPATH=$T_DIR/gopath GO111MODULE=off GOFLAGS='' \
    go build -o h2client main.go) > "$T_DIR/go/build.log" 2>&1; then
    out=$(timeout 30 "$T_DIR/go/h2client" "$CA" https://ok.test/api/echo https://ok.test/private 2>&1)
    check_pair "go net/http" HTTP/2.0 "$out"
else
    t_fail "go net/http: the client did not build: $(head -5 "$T_DIR/go/build.log")"
fi

# ---- allowed and blocked streams at once on one connection ----
ok0=$(h2_count ok)
out=$(timeout 30 "$PY" "$HERE/h2_raw.py" 127.0.0.1 443 ok.test "$CA" mixed 2>&1)
t_contains "one connection: the allowed stream" "$out" "sid=1 status=200 rst=- error=-"
t_contains "... the blocked path: 403 on its stream" "$out" "sid=3 status=403 rst=- error=blocked_by_network_allowlist"
t_contains "... another host (:authority evil.test, SNI ok.test): 403 on its stream" "$out" \
    "sid=5 status=403 rst=- error=blocked_by_network_allowlist"
t_contains "... the allowed stream after them" "$out" "sid=7 status=200 rst=- error=-"
t_contains "... and the connection goes on (no GOAWAY)" "$out" "goaway=none closed=0"
t_logged "... the other host logged as a host mismatch" \
    '^BLOCKED GET https://evil\.test/api/echo?s=5 -> 403 (host mismatch: header=evil\.test, sni=ok\.test)$'
t_logged "... each stream has its line" '^allowed GET https://ok\.test/api/echo?s=7 -> 200$'
t_eq "... the evil.test upstream received nothing" "0" "$(h2_count evil)"
t_eq "... ok.test's upstream received the 2 allowed streams only" "2" "$(($(h2_count ok) - ok0))"
t_eq "... /private never reached it" "0" "$(h2_count ok /private)"

# ---- 100 concurrent streams, one never read ----
rss0=$(t_rss_kb "$AIRLOCK_PID")
out=$(timeout 90 "$PY" "$HERE/h2_raw.py" 127.0.0.1 443 ok.test "$CA" many 100 "$AIRLOCK_PID" 3 2>&1)
echo "# $out"
t_contains "100 streams, stream 1 never read: the other 99 complete, whole" "$out" "completed=99/99 "
t_contains "... no GOAWAY" "$out" "goaway=none"
rss1=$(sed -n 's/.*rss_after=\([0-9]*\).*/\1/p' <<< "$out")
h2_rss_bounded "100 streams with one never read (8 MiB answer held back)" "$rss0" "${rss1:-999999999}"
out=$(curl -sS -m 10 --http2 --cacert "$CA" -w '\n%{http_version} %{http_code}' https://ok.test/api/small 2>&1)
t_eq "a new connection afterwards is served" "2 200" "$(tail -1 <<< "$out")"

# ---- h2c ----
# prior knowledge on port 80: refused cleanly, GOAWAY(HTTP_1_1_REQUIRED = 0xd), no hang
out=$(timeout 10 "$PY" - <<'PY' 2>&1
import socket, struct, time
s = socket.create_connection(("127.0.0.1", 80), timeout=5)
s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\0\0\0\x04\0\0\0\0\0")
buf, t0, goaway = b"", time.time(), None
try:
    while True:
        d = s.recv(65536)
        if not d:
            break
        buf += d
except OSError:
    pass
while len(buf) >= 9:
    n = struct.unpack(">I", b"\0" + buf[:3])[0]
    if buf[3] == 7 and len(buf) >= 17:
        goaway = struct.unpack(">I", buf[13:17])[0]
    buf = buf[9 + n:]
print("goaway=%s secs=%.1f" % (goaway, time.time() - t0))
PY
)
t_contains "h2c prior knowledge on :80: GOAWAY(HTTP_1_1_REQUIRED)" "$out" "goaway=13 "
case "$out" in *"secs=0."* | *"secs=1."*) t_ok "... and the connection ends at once ($out)" ;;
    *) t_fail "... the connection did not end at once: [$out]" ;; esac
t0=$SECONDS
out=$(timeout 20 curl -sS -m 15 --http2-prior-knowledge -w '\n%{http_version} %{http_code}' http://ok.test/api/echo 2>&1)
rc=$?
if [ $rc -ne 0 ] && [ $((SECONDS - t0)) -le 5 ]; then
    t_ok "curl --http2-prior-knowledge on :80 fails fast (exit $rc, $((SECONDS - t0)) s)"
else
    t_fail "curl --http2-prior-knowledge on :80: exit $rc after $((SECONDS - t0)) s: [$out]"
fi
t_logged "... airlock logs the refusal" \
    '^BLOCKED - - -> 400 (malformed request: cleartext HTTP/2 (h2c) is refused; use HTTP/1.1 or TLS)$'
# the Upgrade: h2c request is answered over HTTP/1.1, as without it
out=$(curl -sS -m 10 --http2 -w '\n%{http_version} %{http_code}' http://ok.test/api/echo 2>&1)
t_eq "h2c Upgrade on :80: answered over HTTP/1.1" "1.1 200" "$(tail -1 <<< "$out")"
t_contains "... with the upstream's answer" "$out" "$ECHO"

kill -0 "$AIRLOCK_PID" 2>/dev/null
t_check "airlock alive" test $? -eq 0
t_stop_airlock
t_eq "SIGTERM: exit 0" "0" "$?"
t_done
