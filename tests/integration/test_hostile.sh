#!/bin/bash
# The security review's findings (issue 13), each reproduced against a real airlock: trailer
# fields that crashed the head code, peers that grow airlock's memory without limit (a reader
# that stops after a 101 or inside a passthrough tunnel, pipelined responses after one that
# filled the queue, floods of pipelined blocked requests, floods of interim heads), TLS key
# shares that cost CPU, destinations that are not global addresses, an oversized SNI, control
# bytes in the log, ambiguous Transfer-Encoding, credentials over plain http.
#
# Addresses in the test's own namespace: airlock 127.0.0.1 (:53 :80 :443, explicit proxy
# :3128); hostile_upstream.py on 127.0.0.3 (host.test; :80, :443, and a passthrough far end
# that floods on :8443); every other name the policy allows resolves to an address airlock
# must refuse.
. "$(dirname "$0")/lib.sh"
t_enter_netns "$@"
HERE=$(cd "$(dirname "$0")" && pwd)
ASAN=
ldd "$AIRLOCK" 2>/dev/null | grep -q libasan && ASAN=1
# ASan keeps freed memory in quarantine: without it RSS means what it means in Release
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:quarantine_size_mb=0:malloc_context_size=4"

ip addr add 127.0.0.3/8 dev lo 2>/dev/null || true
cat > "$T_DIR/allow.yaml" <<'YAML'
domains: ["host.test", "rfc1918.test", "cgnat.test", "ula.test", "sitelocal.test", "nat64.test",
          "cname.test", "mapped.test", "sixtofour.test", "self.test"]
url_prefixes:
  - host: flood.test
    tls: passthrough
    ports: [8443]
YAML
cat > "$T_DIR/repl.json" <<'JSON'
{"surrogate-token-1": {"value": "real-secret-1", "scopes": ["host.test"], "headers": ["Authorization"]}}
JSON
# the test resolver, without lib.sh's catch-all for *.test: IPv6-only names must have no A
dnsmasq --keep-in-foreground --no-resolv --no-hosts --conf-file=/dev/null \
    --listen-address=127.0.0.53 --bind-interfaces --port=53 --log-facility=- -q \
    --host-record=host.test,127.0.0.3 --host-record=flood.test,127.0.0.3 \
    --host-record=rfc1918.test,10.99.0.5 --host-record=cgnat.test,100.100.100.200 \
    --host-record=ula.test,fd00:ec2::254 --host-record=sitelocal.test,fec0::5 \
    --host-record=nat64.test,64:ff9b::a9fe:a9fe --host-record=mapped.test,::ffff:10.0.0.1 \
    --host-record=sixtofour.test,2002:a00:1::1 --host-record=self.test,127.0.0.1 \
    --host-record=probe.test,127.0.0.3 --cname=cname.test,rfc1918.test \
    > "$T_DIR/dnsmasq.log" 2>&1 &
T_PIDS+=($!)
t_wait_udp53 127.0.0.53 || exit 1
t_upstream_ca
t_upstream_cert "DNS:host.test,DNS:flood.test" "$T_DIR/up"
UPLOG=$T_DIR/up.log
: > "$UPLOG"
"$PY" "$HERE/hostile_upstream.py" 127.0.0.3 "$UPLOG" --http 80 \
    --https 443 "$T_DIR/up.pem" "$T_DIR/up.key" \
    --tls-flood 8443 "$T_DIR/up.pem" "$T_DIR/up.key" > "$T_DIR/up.err" 2>&1 &
T_PIDS+=($!)
t_wait_port 127.0.0.3 80 && t_wait_port 127.0.0.3 443 && t_wait_port 127.0.0.3 8443 || exit 1
t_start_airlock "$T_DIR/allow.yaml" --upstream-ca "$T_DIR/upca.pem" \
    --replacements "$T_DIR/repl.json" --allow-upstream-cidr 127.0.0.3/32 \
    --listen-proxy 127.0.0.1:3128 || exit 1
CA="$T_DIR/confdir/mitmproxy-ca-cert.pem"
SEND="$HERE/bypass_send.py"
CLIENT="$HERE/hostile_client.py"
h80() { printf '%b' "$1" | "$PY" "$SEND" --quiet "${2:-0.7}" --gap "${3:-0.3}" 127.0.0.1 80; }
h443() { printf '%b' "$2" | "$PY" "$SEND" --tls "$1" --ca "$CA" --quiet "${3:-0.7}" 127.0.0.1 443; }
statuses() { printf '%s' "$1" | grep -ao 'HTTP/1.1 [0-9][0-9][0-9] ' | cut -d' ' -f2 | tr '\n' ' ' | sed 's/ $//'; }
alive() { kill -0 "$AIRLOCK_PID" 2>/dev/null; }
ups() { grep -c "^req " "$UPLOG"; }

# ---- 1. trailer fields ----------------------------------------------------------------------
# Request side: a blocked request's chunked body whose trailer arrives after the 403. A second
# connection leaves a large unfinished head meanwhile (it arranged the heap for the crash).
printf 'GET / HTTP/1.1\r\nHost: host.test\r\nX-Pad: %s\r\n' "$(head -c 60000 /dev/zero | tr '\0' a)" |
    "$PY" "$SEND" --quiet 3 127.0.0.1 80 > /dev/null &
pad=$!
for i in 1 2 3; do
    out=$(h80 "POST /x HTTP/1.1\r\nHost: blocked.test\r\nTransfer-Encoding: chunked\r\n\r\n<PAUSE>0\r\nX: y\r\n\r\n" 0.7 0.5)
    t_eq "request trailer after a 403 (round $i): answered 403, no crash" "403" "$(statuses "$out")"
done
out=$(h80 "POST /x HTTP/1.1\r\nHost: blocked.test\r\nTransfer-Encoding: chunked\r\n\r\n<PAUSE>3\r\nabc\r\n0\r\nServer-Timing: a\r\nX-Two: b\r\n\r\nGET /ok HTTP/1.1\r\nHost: host.test\r\nConnection: close\r\n\r\n")
t_eq "request trailers split from the body, then a pipelined request: both answered" "403 200" "$(statuses "$out")"
wait "$pad"
t_check "airlock alive after request trailers" alive
# allowed request with trailers: relayed on the chunked leg
out=$(h80 "POST /ok HTTP/1.1\r\nHost: host.test\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n<PAUSE>0\r\nX-Trailer: 1\r\n\r\nGET /ok HTTP/1.1\r\nHost: host.test\r\nConnection: close\r\n\r\n")
t_eq "allowed chunked request with a trailer, then another request" "200 200" "$(statuses "$out")"
t_check "upstream got the body (3 bytes) with its trailer" grep -qx "body 3" "$UPLOG"
big=$(head -c 17000 /dev/zero | tr '\0' b)
out=$(h80 "POST /ok HTTP/1.1\r\nHost: host.test\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n<PAUSE>0\r\nX-Big: $big\r\n\r\n")
t_contains "a trailer section over 16 KiB: 400" "$(statuses "$out")" "400"
fields=$(for i in $(seq 1 40); do printf 'X-T%d: v\\r\\n' "$i"; done)
out=$(h80 "POST /ok HTTP/1.1\r\nHost: host.test\r\nTransfer-Encoding: chunked\r\n\r\n<PAUSE>0\r\n${fields}\r\n")
t_contains "more than 32 trailer fields: 400" "$(statuses "$out")" "400"
# Response side: a chunked response whose trailer arrives a moment later, twice on one
# connection (the second request crashed the Release build), plain and TLS.
out=$(h80 "GET /trailers HTTP/1.1\r\nHost: host.test\r\n\r\nGET /trailers HTTP/1.1\r\nHost: host.test\r\nConnection: close\r\n\r\n" 1.5)
t_eq "response trailers, two on one connection: both 200" "200 200" "$(statuses "$out")"
t_eq "response trailers are relayed on the chunked leg" "2" "$(printf '%s' "$out" | grep -ac 'Server-Timing: db;dur=53')"
out=$(h443 host.test "GET /trailers HTTP/1.1\r\nHost: host.test\r\n\r\nGET /trailers HTTP/1.1\r\nHost: host.test\r\nConnection: close\r\n\r\n" 1.5)
t_eq "TLS: response trailers, two on one connection" "200 200" "$(statuses "$out")"
t_check "airlock alive after response trailers" alive

# ---- 2. memory a peer could grow ---------------------------------------------------------------
# Each case offers up to 1 GiB to a reader that stopped; RSS may grow by less than 32 MiB.
# peak_rss PID: airlock's highest RSS (KiB) sampled while the process PID runs.
peak_rss() {
    local peak=0 r
    while kill -0 "$1" 2>/dev/null; do
        r=$(t_rss_kb "$AIRLOCK_PID")
        [ "${r:-0}" -gt "$peak" ] && peak=$r
        sleep 0.05
    done
    echo "$peak"
}
rss_case() { # rss_case "description" command...: runs the command (it stalls a few seconds)
    local d=$1 before after growth
    shift
    before=$(t_rss_kb "$AIRLOCK_PID")
    "$@" > "$T_DIR/case.out" 2>&1 &
    local cpid=$!
    after=$(peak_rss "$cpid") # the client holds still for 4 s: the peak of what airlock queues
    wait "$cpid"
    growth=$((after - before))
    echo "# figures: $d: RSS $before -> $after KiB (peak)"
    t_check "$d: RSS grew by $growth KiB (< 32 MiB)" test "$growth" -lt 32768
}
ws_req='GET /ws HTTP/1.1\r\nHost: host.test\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n'
rss_case "after a 101, a client that stopped reading" \
    sh -c "printf '%b' '$ws_req' | '$PY' '$CLIENT' stall 127.0.0.1 80 --upgrade --secs 4"
t_contains "the 101 was relayed" "$(cat "$T_DIR/case.out")" "HTTP/1.1 101"
rss_case "TLS: after a 101, a client that stopped reading" \
    sh -c "printf '%b' '$ws_req' | '$PY' '$CLIENT' stall 127.0.0.1 443 --tls host.test --ca '$CA' --upgrade --secs 4"
rss_case "passthrough tunnel, a client that stopped reading" \
    "$PY" "$CLIENT" tunnel-stall 127.0.0.1 3128 flood.test:8443 --tls flood.test --ca "$T_DIR/upca.pem" --secs 4
t_contains "the passthrough handshake reached the far end" "$(cat "$T_DIR/case.out")" "handshake ok"
# pipelined: a first response whose last read crosses the high-water mark, then one of 512
# MiB. With the kernel's buffers capped at 64 KiB (this namespace only), the sizes around
# 1128 KiB are the ones that cross in that last read; every size must stay bounded.
wmem=$(sysctl -n net.ipv4.tcp_wmem)
rmem=$(sysctl -n net.ipv4.tcp_rmem)
sysctl -qw net.ipv4.tcp_wmem="4096 16384 65536" net.ipv4.tcp_rmem="4096 16384 65536"
worst=0
for kib in $(seq 1096 8 1176); do
    before=$(t_rss_kb "$AIRLOCK_PID")
    printf 'GET /big?n=%d HTTP/1.1\r\nHost: host.test\r\n\r\nGET /big?n=536870912 HTTP/1.1\r\nHost: host.test\r\n\r\n' \
        $((kib * 1024)) | "$PY" "$CLIENT" stall 127.0.0.1 80 --secs 1.2 > /dev/null &
    cpid=$!
    growth=$(($(peak_rss "$cpid") - before))
    wait "$cpid"
    [ "$growth" -gt "$worst" ] && worst=$growth
    echo "# figures: pipelined /big of $kib KiB then 512 MiB: RSS +$growth KiB"
done
sysctl -qw net.ipv4.tcp_wmem="$wmem" net.ipv4.tcp_rmem="$rmem"
t_check "pipelined responses after one that crossed the high-water mark: RSS +$worst KiB at most (< 32 MiB)" \
    test "$worst" -lt 32768
lines0=$(wc -l < "$T_DIR/net.log")
rss_case "20 MiB of pipelined blocked requests, answers never read" \
    "$PY" "$CLIENT" pipeline 127.0.0.1 80 --host blocked.test --mib 20 --secs 4
# the log writer has caught up once the line count holds still
until_ok 'n=$(wc -l < "$T_DIR/net.log"); sleep 0.3; [ "$n" = "$(wc -l < "$T_DIR/net.log")" ]'
lines=$(($(wc -l < "$T_DIR/net.log") - lines0))
echo "# figures: pipelined blocked requests: $(cat "$T_DIR/case.out"), $lines log lines"
t_check "pipelined blocked requests: answers stop while the client does not read ($lines lines < 50000)" \
    test "$lines" -lt 50000
# interim heads: a bounded number, in a loop
out=$(h80 "GET /interim?n=3 HTTP/1.1\r\nHost: host.test\r\nConnection: close\r\n\r\n")
t_eq "three interim heads, then the answer" "100 100 100 200" "$(statuses "$out")"
out=$(h80 "GET /interim?n=3600 HTTP/1.1\r\nHost: host.test\r\nConnection: close\r\n\r\n")
t_contains "3,600 interim heads in one read: refused after 16 (502)" "$(statuses "$out")" "502"
t_eq "  ... with exactly 16 relayed first" "16" "$(statuses "$out" | tr ' ' '\n' | grep -c '^100$')"
t_logged "  ... and an ERROR line" 'too many interim (1xx) responses'
t_check "airlock alive after the floods" alive

# ---- 3. TLS key shares -------------------------------------------------------------------------
for g in ffdhe2048 ffdhe8192 'ffdhe2048:ffdhe3072:ffdhe4096:ffdhe6144:ffdhe8192'; do
    out=$(echo | timeout 10 openssl s_client -connect 127.0.0.1:443 -servername host.test \
        -groups "$g" -CAfile "$CA" 2>&1)
    t_contains "a ClientHello offering only $g is refused" "$out" "handshake failure"
    t_check "  ... no session" test -z "$(printf '%s' "$out" | grep 'Cipher is ' | grep -v '(NONE)')"
done
out=$(echo | timeout 10 openssl s_client -connect 127.0.0.1:443 -servername host.test \
    -groups ffdhe8192:P-256 -CAfile "$CA" 2>&1)
t_contains "ffdhe8192 then P-256: P-256 is used" "$out" "Server Temp Key: ECDH, prime256v1"
out=$(echo | timeout 10 openssl s_client -connect 127.0.0.1:443 -servername host.test \
    -tls1_2 -CAfile "$CA" 2>&1)
t_contains "TLS 1.2 with OpenSSL's defaults: ECDHE" "$out" "Server Temp Key: X25519"

# ---- 4. destinations that are not global ---------------------------------------------------
for case in "rfc1918.test:10.99.0.5 is not allowed (private (RFC 1918))" \
    "cgnat.test:100.100.100.200 is not allowed (shared address space" \
    "ula.test:fd00:ec2::254 is not allowed (unique local" \
    "sitelocal.test:fec0::5 is not allowed (site-local" \
    "nat64.test:64:ff9b::a9fe:a9fe is not allowed (NAT64 of 169.254.169.254: link-local)" \
    "mapped.test:::ffff:10.0.0.1 is not allowed (IPv4-mapped of 10.0.0.1: private" \
    "sixtofour.test:2002:a00:1::1 is not allowed (6to4 of 10.0.0.1: private" \
    "cname.test:10.99.0.5 is not allowed (private (RFC 1918))"; do
    name=${case%%:*}
    out=$(h80 "GET /x HTTP/1.1\r\nHost: $name\r\nConnection: close\r\n\r\n")
    t_eq "$name: 502" "502" "$(statuses "$out")"
    t_contains "$name: refused as a destination" "$out" "${case#*:}"
done
n=$(ups)
t_eq "none of them reached an upstream" "$n" "$(ups)"

# ---- 5. smaller findings ---------------------------------------------------------------------
sni256=$(printf 'a%.0s' $(seq 1 256) | od -v -An -tx1 | tr -d ' \n')
out=$("$PY" "$CLIENT" hello 127.0.0.1 3128 flood.test:8443 "$sni256")
t_contains "passthrough tunnel, a 256-byte SNI: closed" "$out" "<EOF>"
t_check "airlock alive after the 256-byte SNI" alive
t_logged "  ... and logged as a mismatch" '^BLOCKED CONNECT flood.test:8443 -> 403 (host mismatch: connect=flood.test, sni=none)$'
ctl=$(printf 'ev\033[2Kil\010.test' | od -v -An -tx1 | tr -d ' \n')
out=$("$PY" "$CLIENT" hello 127.0.0.1 3128 flood.test:8443 "$ctl")
t_logged "control bytes of an SNI are escaped in the log" 'sni=ev\\x1b\[2kil\\x08\.test)$'
t_eq "no raw control byte in the log" "0" "$(tr -d '\n\t' < "$T_DIR/net.log" | tr -cd '\000-\037\177' | wc -c)"
# Transfer-Encoding: exactly one field, exactly chunked
n=$(ups)
for te in 'Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked' 'Transfer-Encoding: gzip, chunked' \
    'Transfer-Encoding: ,chunked' 'Transfer-Encoding: foo, chunked' 'Transfer-Encoding: identity'; do
    out=$(h80 "POST /ok HTTP/1.1\r\nHost: host.test\r\n$te\r\n\r\n3\r\nabc\r\n0\r\n\r\n")
    t_eq "$(printf '%b' "$te" | tr '\r\n' '  '): 400" "400" "$(statuses "$out")"
done
t_eq "  ... and none of them reached the upstream" "$n" "$(ups)"
out=$(h80 "POST /ok HTTP/1.1\r\nHost: host.test\r\nTransfer-Encoding: Chunked\r\nConnection: close\r\n\r\n3\r\nabc\r\n0\r\n\r\n")
t_eq "control: Transfer-Encoding: Chunked (case) is relayed" "200" "$(statuses "$out")"
# credentials over plain http
n=$(ups)
out=$(h80 "GET /ok HTTP/1.1\r\nHost: host.test\r\nAuthorization: Bearer surrogate-token-1\r\nConnection: close\r\n\r\n")
t_eq "a surrogate over plain http: 403" "403" "$(statuses "$out")"
t_contains "  ... saying why" "$out" '"error": "credentials_require_https"'
t_eq "  ... and nothing reached the upstream" "$n" "$(ups)"
t_logged "  ... logged" '^BLOCKED GET http://host.test/ok -> 403 (credential needs https)$'
out=$(h443 host.test "GET /ok HTTP/1.1\r\nHost: host.test\r\nAuthorization: Bearer surrogate-token-1\r\nConnection: close\r\n\r\n")
t_eq "control: the same over https is replaced and relayed" "200" "$(statuses "$out")"
t_logged "  ... logged [masked: 1]" '^allowed GET https://host.test/ok -> 200 \[masked: 1\]$'
t_stop_airlock
t_eq "SIGTERM: exit 0" "0" "$?"

# ---- --allow-upstream-cidr never re-opens airlock itself ------------------------------------
t_start_airlock "$T_DIR/allow.yaml" --allow-upstream-cidr 127.0.0.0/8 || exit 1
fds0=$(t_fds "$AIRLOCK_PID")
out=$(h80 "GET /loop HTTP/1.1\r\nHost: self.test\r\nConnection: close\r\n\r\n" 2)
t_eq "a name resolving to airlock, 127.0.0.0/8 allowed: 502" "502" "$(statuses "$out")"
t_contains "  ... as airlock's own listener" "$out" "destination 127.0.0.1 is not allowed (airlock's own listener)"
t_wait_log ' -> 502' # its line; a nested request would have been logged before it ended
t_eq "  ... one request line, no nested requests" "1" "$(grep -c ' -> ' "$T_DIR/net.log")"
until_ok '[ "$(t_fds "$AIRLOCK_PID")" = "$fds0" ]'
t_eq "  ... no fd left behind" "$fds0" "$(t_fds "$AIRLOCK_PID")"
t_stop_airlock
t_done
