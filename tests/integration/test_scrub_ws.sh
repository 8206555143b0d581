#!/bin/bash
# Response scrubbing on a WebSocket (docs/replacements.md, "WebSocket"): an upstream hands the
# real value airlock put in the upgrade request back in its frames; the agent gets the
# surrogate instead, in a text frame, in a message whose value is cut across three fragments
# (each written in two reads, a ping carrying the value between two of them), base64 in a
# 16-bit-length binary frame, many times in a 64-bit-length one, and in the close frame's
# reason. The frames the agent reads are well formed (unmasked, no RSV bit, the new lengths);
# no byte of the real value reaches it; the log names the entry, never the value. The offer of
# permessage-deflate does not reach the upstream, and a compressed (RSV1) frame from it closes
# the WebSocket (1008) before any of it reaches the agent. Peer: scrub_ws.py.
. "$(dirname "$0")/lib.sh"
t_enter_netns "$@"
HERE=$(cd "$(dirname "$0")" && pwd)

REAL="ghp_REALVALUE0123456789abcdefREALVALUE"
SURR="ghp_SurrogateSurrogateSurrogate000001"
cat > "$T_DIR/allow.yaml" <<'YAML'
domains: [ws.test]
YAML
cat > "$T_DIR/repl.json" <<JSON
{"$SURR": {"value": "$REAL", "scopes": ["ws.test"], "headers": ["Authorization"],
           "allow_plain_http": true}}
JSON
mkdir -p "$T_DIR/rec"
"$PY" "$HERE/scrub_ws.py" server 127.0.0.2 80 "$T_DIR/rec" > "$T_DIR/peer.log" 2>&1 &
T_PIDS+=($!)
t_wait_port 127.0.0.2 80 || exit 1
t_start_resolver
t_start_airlock "$T_DIR/allow.yaml" --replacements "$T_DIR/repl.json" || exit 1

ws() { timeout 20 "$PY" "$HERE/scrub_ws.py" client 127.0.0.1 80 ws.test "$@"; }
b64() { printf '%s' "$1" | base64 -w0; }

out=$(ws /frames "Bearer $SURR" "$T_DIR/frames.raw")
t_eq "the upstream's frames reach the agent with the surrogate in place of the real value" \
    "text auth=$SURR
ping $REAL
text frag=$SURR!
$("$PY" "$HERE/scrub_ws.py" expect "$REAL" "$SURR")
text clean
close 1000 bye $SURR
closed" "$(printf '%s\n' "$out" | sed "s/^ping $SURR\$/ping $REAL/")"
t_contains "... the ping between the fragments too" "$out" "ping $SURR"
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
t_done
