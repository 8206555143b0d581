#!/bin/bash
# Response scrubbing on a WebSocket (docs/replacements.md, "WebSocket"): an upstream hands the
# real value airlock put in the upgrade request back in its frames; the agent gets the
# surrogate instead, in a text frame, in a message whose value is cut across three fragments
# (each written in two reads, a ping carrying the value between two of them), base64 in a
# 16-bit-length binary frame, many times in a 64-bit-length one, and in the close frame's
# reason. The frames the agent reads are well formed (unmasked, no RSV bit, the new lengths);
# no byte of the real value reaches it; the log names the entry, never the value. The offer of
# permessage-deflate does not reach the upstream, and a compressed (RSV1) frame from it closes
# the WebSocket (1008) before any of it reaches the agent. The same frames through an HTTP/2
# WebSocket (RFC 8441, python3-h2 client; the upstream over TLS). Peer: scrub_ws.py.
. "$(dirname "$0")/lib.sh"
t_enter_netns "$@"
HERE=$(cd "$(dirname "$0")" && pwd)

REAL="ghp_REALVALUE0123456789abcdefREALVALUE"
SURR="ghp_SurrogateSurrogateSurrogate000001"
cat > "$T_DIR/allow.yaml" <<'YAML'
domains: [ws.test, wsh2.test]
YAML
cat > "$T_DIR/repl.json" <<JSON
{"$SURR": {"value": "$REAL", "scopes": ["ws.test", "wsh2.test"], "headers": ["Authorization"],
           "allow_plain_http": true}}
JSON
mkdir -p "$T_DIR/rec"
"$PY" "$HERE/scrub_ws.py" server 127.0.0.2 80 "$T_DIR/rec" > "$T_DIR/peer.log" 2>&1 &
T_PIDS+=($!)
t_wait_port 127.0.0.2 80 || exit 1
ip addr add 127.0.0.4/8 dev lo 2>/dev/null || true
t_upstream_ca
t_upstream_cert "DNS:wsh2.test" "$T_DIR/wsh2"
mkdir -p "$T_DIR/rec4"
"$PY" "$HERE/scrub_ws.py" server 127.0.0.4 443 "$T_DIR/rec4" "$T_DIR/wsh2.pem" "$T_DIR/wsh2.key" \
    > "$T_DIR/peer4.log" 2>&1 &
T_PIDS+=($!)
t_wait_port 127.0.0.4 443 || exit 1
t_start_resolver --address=/wsh2.test/127.0.0.4
t_start_airlock "$T_DIR/allow.yaml" --replacements "$T_DIR/repl.json" \
    --allow-upstream-cidr 127.0.0.4/32 --upstream-ca "$T_DIR/upca.pem" || exit 1
CA="$T_DIR/confdir/mitmproxy-ca-cert.pem"

ws() { timeout 20 "$PY" "$HERE/scrub_ws.py" client 127.0.0.1 80 ws.test "$@"; }
b64() { printf '%s' "$1" | base64 -w0; }

out=$(ws /frames "Bearer $SURR" "$T_DIR/frames.raw")
t_eq "the upstream's frames reach the agent with the surrogate in place of the real value" \
    "text auth=$SURR
ping $SURR
text frag=$SURR!
$("$PY" "$HERE/scrub_ws.py" expect "$REAL" "$SURR")
text clean
close 1000 bye $SURR
closed" "$out"
# the newest connection's head (t_wait_port's probe was a connection too)
head=$(printf '%s\n' "$T_DIR/rec/"ws*.head | sort -V | tail -1)
t_check "the upstream got the real value (it echoes it)" grep -q "$REAL" "$head"
t_check "... and no offer of permessage-deflate" \
    sh -c "test -s '$head' && ! grep -qi 'sec-websocket-extensions' '$head'"
t_check "no byte sequence of the real value, raw or base64, reached the agent" \
    sh -c "! grep -aq -e '$REAL' -e '$(b64 "$REAL" | tr -d =)' '$T_DIR/frames.raw'"
t_logged "the log names the entry replaced in the upstream's frames" \
    '^allowed GET http://ws\.test/frames -> 101 (websocket: from the upstream \[scrubbed: [0-9]* entry\[0\]\.value\])$'
t_check "no real value in the log" sh -c "! grep -q '$REAL' '$T_DIR/net.log'"

out=$(ws /rsv "Bearer $SURR" "$T_DIR/rsv.raw")
t_eq "a compressed (RSV1) frame from the upstream: closed with 1008, nothing of it relayed" \
    "close 1008 blocked by airlock
closed" "$out"
t_check "... no byte of the real value reached the agent" \
    sh -c "! grep -aq '$REAL' '$T_DIR/rsv.raw'"
t_logged "... logged" \
    '^BLOCKED GET http://ws\.test/rsv -> 101 (websocket: the upstream sent a frame with RSV bits set (no extension was negotiated); the WebSocket was closed with 1008)$'
if "$PY" -c 'import h2' 2> /dev/null; then
    out=$(timeout 20 "$PY" "$HERE/scrub_ws.py" h2client wsh2.test /frames "$CA" "Bearer $SURR" \
        "$T_DIR/h2.raw")
    t_eq "HTTP/2 WebSocket: the same frames, scrubbed" \
        "text auth=$SURR
ping $SURR
text frag=$SURR!
$("$PY" "$HERE/scrub_ws.py" expect "$REAL" "$SURR")
text clean
close 1000 bye $SURR
closed" "$out"
    t_check "... no byte of the real value reached the agent" \
        sh -c "test -s '$T_DIR/h2.raw' && ! grep -aq '$REAL' '$T_DIR/h2.raw'"
    t_logged "... logged by entry name" \
        '^allowed GET https://wsh2\.test/frames -> 101 (websocket: from the upstream \[scrubbed: [0-9]* entry\[0\]\.value\])$'
else
    t_not_made "HTTP/2 WebSocket" "python3-h2 is not installed"
fi
t_done
