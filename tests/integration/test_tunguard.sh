#!/bin/bash
# The guard of tunnels (issue 21, docs/budgets.md and docs/leak-scanning.md): after a WebSocket
# upgrade and in a `tls: passthrough` CONNECT tunnel, the bytes relayed count against the host's
# sent/received budgets (the piece that crosses goes up to the budget, then both ends close and
# one line says which budget), and a WebSocket's client frames are scanned for secrets and
# canaries (raw, split across frames or reads, in a ping): the frame carrying one never reaches
# the upstream, both ends close, the log names it. Frames airlock cannot read (RSV bits) close
# the WebSocket; the offer of permessage-deflate never reaches the upstream. A clean WebSocket
# still echoes both ways (fragments with a ping between them, pings, empty and 64-bit-length
# frames). Upstreams: ws_peers.py, recording what reached them.
. "$(dirname "$0")/lib.sh"
t_enter_netns "$@"
HERE=$(cd "$(dirname "$0")" && pwd)

REAL="ghp_REALVALUE0123456789abcdefREALVALUE"
SURR="ghp_SurrogateSurrogateSurrogate000001"
CANARY="CANARY-7f3a9c-do-not-send"
cat > "$T_DIR/allow.yaml" <<'YAML'
domains: ["ws.test", "wsdl.test", "wsleak.test", "wsh2.test", "ws2.test"]
url_prefixes:
  - host: pass.test
    tls: passthrough
  - host: passdl.test
    tls: passthrough
budgets:
  - host: ws.test
    sent: 100KB
  - host: wsdl.test
    received: 100KB
  - host: pass.test
    sent: 100KB
  - host: passdl.test
    received: 100KB
  - host: ws2.test
    sent: 100KB
YAML
cat > "$T_DIR/repl.json" <<JSON
{
  "$SURR": {"value": "$REAL", "scopes": ["wsleak.test"], "headers": ["Authorization"]},
  "canaries": [{"name": "ssh-marker", "value": "$CANARY"}]
}
JSON
ip addr add 127.0.0.3/8 dev lo 2>/dev/null || true
ip addr add 127.0.0.4/8 dev lo 2>/dev/null || true
mkdir -p "$T_DIR/rec"
# HTTP/2 WebSockets need TLS toward the client; ws.py (TLS, test CA) echoes behind them
t_upstream_ca
t_upstream_cert "DNS:wsh2.test" "$T_DIR/wsh2"
"$PY" "$HERE/ws.py" server 127.0.0.4 443 "$T_DIR/wsh2.pem" "$T_DIR/wsh2.key" > /dev/null 2>&1 &
T_PIDS+=($!)
"$PY" "$HERE/ws_peers.py" server 127.0.0.2 80 "$T_DIR/rec" > "$T_DIR/peer.log" 2>&1 &
T_PIDS+=($!)
"$PY" "$HERE/ws_peers.py" raw 127.0.0.2 443 "$T_DIR/rec" > "$T_DIR/raw.log" 2>&1 &
T_PIDS+=($!)
mkdir -p "$T_DIR/rec3"
"$PY" "$HERE/ws_peers.py" raw 127.0.0.3 443 "$T_DIR/rec3" 1000000 > "$T_DIR/raw3.log" 2>&1 &
T_PIDS+=($!)
t_wait_port 127.0.0.2 80 || exit 1
t_wait_port 127.0.0.2 443 || exit 1
t_wait_port 127.0.0.3 443 || exit 1
t_wait_port 127.0.0.4 443 || exit 1
t_start_resolver --address=/passdl.test/127.0.0.3 --address=/wsh2.test/127.0.0.4
t_start_airlock "$T_DIR/allow.yaml" --replacements "$T_DIR/repl.json" \
    --listen-proxy 127.0.0.1:3128 --allow-upstream-cidr 127.0.0.3/32 \
    --allow-upstream-cidr 127.0.0.4/32 --upstream-ca "$T_DIR/upca.pem" || exit 1
CA="$T_DIR/confdir/mitmproxy-ca-cert.pem"

ws() { timeout 20 "$PY" "$HERE/ws_peers.py" client 127.0.0.1 80 "$@"; }
last() { printf '%s\n' "$T_DIR/rec/"ws*."$1" | sort -V | tail -1; } # the newest connection's

# ---- a clean WebSocket echoes both ways ----
out=$(ws wsleak.test /echo echo)
t_eq "a clean WebSocket through the guard: messages, fragments with a ping between them, pings, an empty message, a 64-bit length, close" \
    "echo hello
pong p1
echo frag-ment
pong 
echo 
echo $(head -c 70000 /dev/zero | tr '\0' x)
close 1000 " "$out"
grep -qi 'sec-websocket-extensions' "$(last head)"
t_check "... the offer of permessage-deflate did not reach the upstream" test $? -ne 0

# ---- the secret guard on client frames ----
out=$(ws wsleak.test /echo send "text:hello" "text:token=$REAL;")
t_eq "a text frame carrying a secret: the one before it is echoed, then a close frame (1008)" \
    "echo hello
close 1008 blocked by airlock" "$out"
t_logged "... logged naming the entry, not the value" \
    '^BLOCKED GET http://wsleak\.test/echo -> 101 (leak: secret entry\[0\]\.value, raw, in a WebSocket message; the WebSocket was closed with 1008)$'
grep -qF "$REAL" "$(last pl)"
t_check "... the upstream never received the value" test $? -ne 0
grep -qF "token=" "$(last pl)"
t_check "... nor the frame that carried it" test $? -ne 0

out=$(ws wsleak.test /echo send "frag:abc-${REAL:0:15}|${REAL:15}-def")
t_eq "a secret split across two fragments 0.3 s apart: closed" "close 1008 blocked by airlock" "$out"
grep -qF "${REAL:0:15}" "$(last pl)"
t_check "... its first half was held back, never sent" test $? -ne 0
grep -qF "abc-" "$(last pl)"
t_check "... while the fragment's bytes before it went on" test $? -eq 0

out=$(ws wsleak.test /echo send "split:xx $(printf '%s' "$REAL" | base64 -w0) yy:30")
t_eq "a secret base64 in one frame written in two reads: closed" "close 1008 blocked by airlock" "$out"
t_logged "... logged as base64" '(leak: secret entry\[0\]\.value, base64, in a WebSocket message; the WebSocket was closed with 1008)$'
grep -qF "$(printf '%s' "$REAL" | base64 -w0 | head -c 12)" "$(last pl)"
t_check "... the upstream did not get its start" test $? -ne 0

out=$(ws wsleak.test /echo send "ping:$CANARY")
t_eq "a canary in a ping: closed" "close 1008 blocked by airlock" "$out"
t_logged "... logged naming the canary" \
    '^BLOCKED GET http://wsleak\.test/echo -> 101 (leak: canary ssh-marker, raw, in a WebSocket ping; the WebSocket was closed with 1008)$'
grep -qF "$CANARY" "$(last pl)"
t_check "... the upstream never received it" test $? -ne 0

out=$(ws wsleak.test /echo send "rsv:compressed?")
t_eq "a frame with RSV1 set (compressed: cannot be scanned): closed" "close 1008 blocked by airlock" "$out"
t_logged "... logged" '^BLOCKED GET http://wsleak\.test/echo -> 101 (websocket: a frame with RSV bits set (no extension was negotiated); the WebSocket was closed with 1008)$'

# the same over HTTP/2 (RFC 8441 extended CONNECT)
out=$(timeout 15 "$PY" "$HERE/ws_h2.py" wsh2.test /chat "$CA" hello 2>&1)
t_eq "h2 WebSocket without a secret: relayed" "status=200 echo: hello" \
    "$(printf '%s' "$out" | tr '\n' ' ' | sed 's/echo=/ /;s/  / /')"
out=$(timeout 15 "$PY" "$HERE/ws_h2.py" wsh2.test /chat "$CA" "x$REAL" 2>&1)
t_eq "h2 WebSocket carrying a secret: no echo, a close frame (1008)" "status=200 close=1008" \
    "$(printf '%s' "$out" | tr '\n' ' ' | sed 's/ $//')"
t_logged "... logged" \
    '^BLOCKED GET https://wsh2\.test/chat -> 101 (leak: secret entry\[0\]\.value, raw, in a WebSocket message; the WebSocket was closed with 1008)$'

for v in "$REAL" "$CANARY"; do
    if grep -qF -- "$v" "$T_DIR/net.log" "$T_DIR/airlock.err"; then t_fail "a value reached the log"; fi
done
t_ok "no value in the network log or on stderr"

# ---- budgets: WebSocket ----
out=$(ws ws.test /sink upload 1000000)
t_contains "a 1 MB WebSocket upload against a 100KB sent budget is cut" "$out" "closed"
t_logged "... logged with the budget" \
    '^BLOCKED GET http://ws\.test/sink -> 101 (budget: sent for ws\.test, 100000/100000; the WebSocket was cut after 100000 bytes sent)$'
got=$(wc -c < "$(last bin)")
echo "# the WebSocket upstream got $got raw bytes of frames (budget 100000)"
t_check "... the upstream received at most the budget" test "$got" -le 100000
t_check "... and most of it (more than 90000 bytes)" test "$got" -gt 90000
out=$(ws ws.test /sink upload 1000)
t_contains "... the next WebSocket to ws.test is refused before the upgrade" "$out" "HTTP/1.1 429 "
t_logged "... logged" '^BLOCKED GET http://ws\.test/sink -> 429 (budget: sent for ws\.test, 100000/100000)$'

out=$(ws wsdl.test /down?n=1000000 download)
got=${out#got }
echo "# the WebSocket client got $got raw bytes (received budget 100000)"
t_check "a 1 MB WebSocket download against a 100KB received budget is cut at the budget" \
    test "$got" -le 100000 -a "$got" -gt 90000
t_logged "... logged" \
    '^BLOCKED GET http://wsdl\.test/down?n=1000000 -> 101 (budget: received for wsdl\.test, 100000/100000; the WebSocket was cut after 100000 bytes received)$'

# ---- budgets: passthrough tunnels ----
tun() { timeout 20 "$PY" "$HERE/ws_peers.py" tunnel 127.0.0.1 3128 "$@"; }
out=$(tun pass.test up 1000000)
t_logged "a passthrough tunnel sending 1 MB against a 100KB sent budget is cut, logged" \
    '^BLOCKED CONNECT pass\.test:443 -> 200 tunnel (budget: sent for pass\.test, 100000/100000; the tunnel was cut after 100000 bytes sent)$'
got=$(wc -c < "$(printf '%s\n' "$T_DIR"/rec/raw*.bin | sort -V | tail -1)")
echo "# the passthrough upstream got $got bytes (budget 100000; the client: $out)"
t_check "... the upstream received at most the budget" test "$got" -le 100000 -a "$got" -gt 90000
out=$(tun pass.test up 1000)
t_contains "... the next CONNECT to pass.test is answered 429" "$out" "HTTP/1.1 429 "
t_logged "... logged" '^BLOCKED CONNECT pass\.test:443 -> 429 (budget: sent for pass\.test, 100000/100000)$'

out=$(tun passdl.test down)
got=${out#got }
echo "# the passthrough client got $got bytes (received budget 100000)"
t_check "a passthrough tunnel receiving 1 MB against a 100KB received budget is cut at it" \
    test "$got" -le 100000 -a "$got" -gt 90000
t_logged "... logged" \
    '^BLOCKED CONNECT passdl\.test:443 -> 200 tunnel (budget: received for passdl\.test, 100000/100000; the tunnel was cut after 100000 bytes received)$'

# ---- SIGHUP: a budget's count survives, a tunnel opened before keeps counting ----
ws ws2.test /sink upload 1000000 50000 "$T_DIR/go" > "$T_DIR/ws2.out" &
# shellcheck disable=SC2016 # expanded by until_ok
until_ok 'grep -q paused "$T_DIR/ws2.out"'
sed -i '/host: ws2.test/,+1d' "$T_DIR/allow.yaml"
t_reload
t_contains "reloaded without ws2.test's budget" "$(tail -1 "$T_DIR/airlock.err")" "allowlist reloaded"
touch "$T_DIR/go"
wait $!
t_contains "a WebSocket opened before the reload still counts on the removed budget: cut" \
    "$(cat "$T_DIR/ws2.out")" "closed"
t_logged "... at it, logged" \
    '^BLOCKED GET http://ws2\.test/sink -> 101 (budget: sent for ws2\.test, 100000/100000; the WebSocket was cut after 100000 bytes sent)$'
out=$(ws ws2.test /sink upload 300000)
t_contains "... while a new one to ws2.test is no longer counted" "$out" "sent 311296"
t_contains "after SIGHUP ws.test's sent budget is still used up" "$(ws ws.test /sink upload 1000)" \
    "HTTP/1.1 429 "

kill -0 "$AIRLOCK_PID" 2>/dev/null
t_check "airlock alive" test $? -eq 0
t_stop_airlock
t_eq "SIGTERM: exit 0" "0" "$?"
t_done
