#!/bin/bash
# Response scrubbing (docs/replacements.md, "Responses"): an upstream that echoes the request's
# headers hands back the real value airlock put in; the agent gets the surrogate again, in the
# body (raw and base64) and in a header, and the log line counts it by entry name. A response
# without a value keeps its framing. A token endpoint (an STS AssumeRole answer, XML) that hands
# out the configured aws-sigv4 entry's real key id, secret key and session token: the agent
# gets the surrogate key id and session token, and a placeholder for the secret key. Upstream: a
# small Python server that echoes the request's Authorization value in a header and in its body
# (raw and base64), and answers POST /sts with that XML.
. "$(dirname "$0")/lib.sh"
t_enter_netns "$@"

REAL="ghp_REALVALUE0123456789abcdefREALVALUE"
SURR="ghp_SurrogateSurrogateSurrogate000001"
cat > "$T_DIR/allow.yaml" <<'YAML'
domains: [echo.test]
YAML
REAL_AKID=ASIAREALKEY000000002
REAL_SECRET='je7MtGbClwBF/2Zp9Utk/h3yCo8nvbREALKEY02'
REAL_TOKEN='FwoGZXIvYXdzEREAL/Session+Token=Value/0123456789abcdefREALTOKEN=='
SURR_AKID=ASIASURROGATE0000002
SURR_TOKEN='SurrogateSessionTokenSURR0000000000000000000000000000000000000002'
cat > "$T_DIR/repl.json" <<JSON
{"$SURR": {"value": "$REAL", "scopes": ["echo.test"], "headers": ["Authorization"],
           "allow_plain_http": true},
 "$SURR_AKID": {"type": "aws-sigv4", "access_key_id": "$REAL_AKID",
                "secret_access_key": "$REAL_SECRET", "session_token": "$REAL_TOKEN",
                "surrogate_session_token": "$SURR_TOKEN", "scopes": ["sts.amazonaws.com"]}}
JSON
sts_xml() { # the AssumeRole answer's shape (STS API reference), with the given credentials
    cat <<XML
<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <AssumeRoleResult>
    <AssumedRoleUser>
      <Arn>arn:aws:sts::123456789012:assumed-role/demo/airlock</Arn>
      <AssumedRoleId>AROA3XFRBF535PLBIFPI4:airlock</AssumedRoleId>
    </AssumedRoleUser>
    <Credentials>
      <AccessKeyId>$1</AccessKeyId>
      <SecretAccessKey>$2</SecretAccessKey>
      <SessionToken>$3</SessionToken>
      <Expiration>2026-11-28T12:00:00Z</Expiration>
    </Credentials>
  </AssumeRoleResult>
  <ResponseMetadata>
    <RequestId>c6104cbe-af31-11e0-8154-cbc7ccf896c7</RequestId>
  </ResponseMetadata>
</AssumeRoleResponse>
XML
}
sts_xml "$REAL_AKID" "$REAL_SECRET" "$REAL_TOKEN" > "$T_DIR/sts.xml"
ip addr add 127.0.0.3/8 dev lo 2>/dev/null || true
# an upstream that echoes the Authorization value in a header, raw and base64 in its body
cat > "$T_DIR/echo.py" <<'PY'
import base64, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        a = self.headers.get("Authorization", "")
        tok = a.split(" ", 1)[-1]
        if self.path == "/plain":
            body = b"nothing to see here\n"
        else:
            body = ("raw=%s b64=%s\n" % (tok, base64.b64encode(tok.encode()).decode())).encode()
        self.send_response(200)
        self.send_header("X-Echo", a)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        body = open(sys.argv[1], "rb").read()
        self.send_response(200)
        self.send_header("Content-Type", "text/xml")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
ThreadingHTTPServer(("127.0.0.3", 80), H).serve_forever()
PY
"$PY" "$T_DIR/echo.py" "$T_DIR/sts.xml" > /dev/null 2>&1 &
T_PIDS+=($!)
t_wait_port 127.0.0.3 80 || exit 1
t_start_resolver --address=/echo.test/127.0.0.3
t_start_airlock "$T_DIR/allow.yaml" --replacements "$T_DIR/repl.json" \
    --allow-upstream-cidr 127.0.0.3/32 || exit 1

b64() { printf '%s' "$1" | base64 -w0; }
out=$(curl -sS -m 10 -D "$T_DIR/h1" -H "Authorization: Bearer $SURR" http://echo.test/echo)
t_eq "the body: the surrogate again, raw and base64" "raw=$SURR b64=$(b64 "$SURR")" "$out"
t_check "the header: the surrogate again" grep -qi "^X-Echo: Bearer $SURR" "$T_DIR/h1"
t_check "no real value reached the agent" sh -c "! grep -q '$REAL\|$(b64 "$REAL")' '$T_DIR/h1'"
t_check "... the body kept a Content-Length, the new one" \
    grep -qi "^Content-Length: $((${#out} + 1))" "$T_DIR/h1"
t_logged "the log line: masked on the way in, scrubbed on the way out, by entry name" \
    '^allowed GET http://echo\.test/echo -> 200 \[masked: 1\] \[scrubbed: 3 entry\[0\]\.value\]$'
t_check "no real value in the log" sh -c "! grep -q '$REAL' '$T_DIR/net.log'"

out=$(curl -sS -m 10 -D "$T_DIR/h2" -H "Authorization: Bearer $SURR" http://echo.test/plain)
t_eq "a body without a value: as it came" "nothing to see here" "$out"
t_check "... its Content-Length kept" grep -qi '^Content-Length: 20' "$T_DIR/h2"
t_logged "... nothing scrubbed in the body (the header echo was)" \
    '^allowed GET http://echo\.test/plain -> 200 \[masked: 1\] \[scrubbed: 1 entry\[0\]\.value\]$'
# a token endpoint: an STS AssumeRole answer carrying the aws-sigv4 entry's real credentials
out=$(curl -sS -m 10 -D "$T_DIR/h3" -d 'Action=AssumeRole&Version=2011-06-15' \
    http://echo.test/sts | tee "$T_DIR/b3")
t_eq "an STS AssumeRole answer: the surrogate key id and session token, a placeholder secret" \
    "$(sts_xml "$SURR_AKID" airlock-scrubbed "$SURR_TOKEN")" "$out"
t_check "... no real credential reached the agent" \
    sh -c "! grep -q -e '$REAL_AKID' -e '$REAL_SECRET' -e '$REAL_TOKEN' '$T_DIR/h3' '$T_DIR/b3'"
t_logged "... the log line names the entry's three fields" \
    '^allowed POST http://echo\.test/sts -> 200 \[scrubbed: 3 entry\[1\]\.access_key_id, entry\[1\]\.secret_access_key, entry\[1\]\.session_token\]$'
t_check "... and no real credential" \
    sh -c "! grep -q -e '$REAL_AKID' -e '$REAL_SECRET' -e '$REAL_TOKEN' '$T_DIR/net.log'"

# --scrub-responses off (an operator debugging an upstream) passes answers as they come
t_stop_airlock
t_start_airlock "$T_DIR/allow.yaml" --replacements "$T_DIR/repl.json" \
    --allow-upstream-cidr 127.0.0.3/32 --scrub-responses off || exit 1
out=$(curl -sS -m 10 -H "Authorization: Bearer $SURR" http://echo.test/echo)
t_eq "--scrub-responses off: the echo shows the real value" "raw=$REAL b64=$(b64 "$REAL")" "$out"
out=$("$AIRLOCK" run --upstream-dns 127.0.0.53 --allowlist "$T_DIR/allow.yaml" \
    --scrub-responses maybe 2>&1)
t_contains "--scrub-responses takes on or off" "$out" "bad value for --scrub-responses (on or off): 'maybe'"
t_done
