#!/bin/bash
# Response scrubbing of trailers (docs/replacements.md, "Responses"): an upstream that answers
# chunked with a trailer echoing the request's Authorization value (as a gRPC error message
# may) hands back the real value airlock put in; the agent gets the surrogate in that trailer,
# over HTTP/1.1 (curl, plain HTTP) and over HTTP/2 (curl --http2 through airlock's TLS), the
# other trailer as it was, and the log line counts it. Upstream: a small Python server on
# 127.0.0.2, port 80 and (TLS, test CA) 443.
. "$(dirname "$0")/lib.sh"
t_enter_netns "$@"

REAL="ghp_REALVALUE0123456789abcdefREALVALUE"
SURR="ghp_SurrogateSurrogateSurrogate000001"
cat > "$T_DIR/allow.yaml" <<'YAML'
domains: [tr.test]
YAML
cat > "$T_DIR/repl.json" <<JSON
{"$SURR": {"value": "$REAL", "scopes": ["tr.test"], "headers": ["Authorization"],
           "allow_plain_http": true}}
JSON
t_upstream_ca
t_upstream_cert "DNS:tr.test" "$T_DIR/tr"
cat > "$T_DIR/tr.py" <<'PY'
import socket, ssl, sys, threading
def serve(c):
    try:
        got = b""
        while b"\r\n\r\n" not in got:
            d = c.recv(4096)
            if not d:
                return
            got += d
        auth = b""
        for l in got.split(b"\r\n"):
            if l.lower().startswith(b"authorization:"):
                auth = l.split(b":", 1)[1].strip()
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n"
                  b"Trailer: X-Echo, X-Sum\r\nConnection: close\r\n\r\n"
                  b"6\r\nhello\n\r\n0\r\nX-Echo: " + auth + b"\r\nX-Sum: abc\r\n\r\n")
    finally:
        c.close()
def listen(port, ctx):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.2", port))
    s.listen(16)
    while True:
        c, _ = s.accept()
        if ctx:
            try:
                c = ctx.wrap_socket(c, server_side=True)
            except (ssl.SSLError, OSError):
                c.close()
                continue
        threading.Thread(target=serve, args=(c,), daemon=True).start()
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(sys.argv[1], sys.argv[2])
threading.Thread(target=listen, args=(443, ctx), daemon=True).start()
listen(80, None)
PY
"$PY" "$T_DIR/tr.py" "$T_DIR/tr.pem" "$T_DIR/tr.key" > "$T_DIR/tr.log" 2>&1 &
T_PIDS+=($!)
t_wait_port 127.0.0.2 80 || exit 1
t_wait_port 127.0.0.2 443 || exit 1
t_start_resolver
t_start_airlock "$T_DIR/allow.yaml" --replacements "$T_DIR/repl.json" \
    --upstream-ca "$T_DIR/upca.pem" || exit 1
CA="$T_DIR/confdir/mitmproxy-ca-cert.pem"

out=$(curl -sS -m 10 --raw -H "Authorization: Bearer $SURR" http://tr.test/h1)
t_contains "HTTP/1.1: the trailer carries the surrogate" "$(tr -d '\r' <<< "$out")" "X-Echo: Bearer $SURR"
t_contains "... the other trailer as it was" "$(tr -d '\r' <<< "$out")" "X-Sum: abc"
t_check "... no real value reached the agent" sh -c "! printf '%s' '$out' | grep -q '$REAL'"
t_logged "... the log line counts it" \
    '^allowed GET http://tr\.test/h1 -> 200 \[masked: 1\] \[scrubbed: 1 entry\[0\]\.value\]$'

curl -sS -m 10 --http2 --cacert "$CA" -D "$T_DIR/h2.head" -o "$T_DIR/h2.body" \
    -H "Authorization: Bearer $SURR" https://tr.test/h2
t_eq "HTTP/2: the body" "hello" "$(cat "$T_DIR/h2.body")"
t_check "... HTTP/2 was negotiated" grep -q '^HTTP/2 200' "$T_DIR/h2.head"
t_check "... the trailer carries the surrogate" grep -qi "^x-echo: Bearer $SURR" "$T_DIR/h2.head"
t_check "... the other trailer as it was" grep -qi "^x-sum: abc" "$T_DIR/h2.head"
t_check "... no real value reached the agent" sh -c "! grep -q '$REAL' '$T_DIR/h2.head' '$T_DIR/h2.body'"
t_logged "... the log line counts it" \
    '^allowed GET https://tr\.test/h2 -> 200 \[masked: 1\] \[scrubbed: 1 entry\[0\]\.value\]$'
t_check "no real value in the log" sh -c "! grep -q '$REAL' '$T_DIR/net.log'"
t_done
