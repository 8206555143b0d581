#!/bin/bash
# Issue 5: masked secrets through real clients (curl, Python requests) over TLS to an upstream
# that echoes the headers it received. Real values must arrive upstream only for scoped
# hosts and never appear in the network log or on stderr.
. "$(dirname "$0")/lib.sh"
t_enter_netns "$@"
HERE=$(cd "$(dirname "$0")" && pwd)

REAL_GH="ghp_REALREALREALREALREALREALREALREAL0001"
SURR_GH="ghp_SurrogateSurrogateSurrogate000001"
REAL_KEY="sk-ant-REAL-secret-value-0002"
SURR_KEY="sk-ant-SURR-surrogate-val-02"
cat > "$T_DIR/allow.yaml" <<'YAML'
domains: ["echo.test", "other.test"]
YAML
cat > "$T_DIR/repl.json" <<JSON
{
  "$SURR_GH": {"value": "$REAL_GH", "scopes": ["echo.test"], "headers": ["Authorization"]},
  "$SURR_KEY": {"value": "$REAL_KEY", "scopes": ["*.test"], "headers": ["X-Api-*"]}
}
JSON
ip addr add 127.0.0.3/8 dev lo 2>/dev/null || true
t_start_resolver --address=/echo.test/127.0.0.3 --address=/other.test/127.0.0.3
t_upstream_ca
t_upstream_cert "DNS:echo.test,DNS:other.test" "$T_DIR/up"
cat > "$T_DIR/tls_echo.py" <<'PYX'
import ssl, sys, runpy
sys.argv = ["upstream.py", "127.0.0.3", "443"]
import http.server
orig = http.server.ThreadingHTTPServer.get_request
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(sys.stdin.readline().strip(), sys.stdin.readline().strip())
def get_request(self):
    c, a = orig(self)
    return ctx.wrap_socket(c, server_side=True), a
http.server.ThreadingHTTPServer.get_request = get_request
runpy.run_path(sys.argv[0] if False else "__UPSTREAM__", run_name="__main__")
PYX
sed -i "s|__UPSTREAM__|$HERE/upstream.py|" "$T_DIR/tls_echo.py"
printf '%s\n%s\n' "$T_DIR/up.pem" "$T_DIR/up.key" | "$PY" "$T_DIR/tls_echo.py" > /dev/null 2>&1 &
T_PIDS+=($!)
t_wait_port 127.0.0.3 443 || exit 1
# The upstream echoes what it got: answers are not scrubbed here (--scrub-responses off), so
# the echo shows the real value that went upstream; test_scrub.sh covers scrubbing.
t_start_airlock "$T_DIR/allow.yaml" --replacements "$T_DIR/repl.json" --scrub-responses off \
    --upstream-ca "$T_DIR/upca.pem" --allow-upstream-cidr 127.0.0.3/32 || exit 1
CA="$T_DIR/confdir/mitmproxy-ca-cert.pem"

hdr() { # hdr JSON NAME -> values of that header, one per line
    /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); [print(v) for k,v in d["headers"] if k.lower()==sys.argv[1].lower()]' "$1"
}

out=$(curl -s -m 5 --cacert "$CA" -H "Authorization: Bearer $SURR_GH" https://echo.test/echo-headers)
t_eq "curl: surrogate replaced in scope" "Bearer $REAL_GH" "$(echo "$out" | hdr authorization)"
out=$(curl -s -m 5 --cacert "$CA" -H "Authorization: Bearer $SURR_GH" https://other.test/echo-headers)
t_eq "curl: out of scope goes out unchanged" "Bearer $SURR_GH" "$(echo "$out" | hdr authorization)"
out=$(curl -s -m 5 --cacert "$CA" -H "Authorization: Bearer attacker" https://echo.test/echo-headers)
t_eq "curl: foreign credential stripped" "" "$(echo "$out" | hdr authorization)"
out=$(curl -s -m 5 --cacert "$CA" -u "x-access-token:$SURR_GH" https://echo.test/echo-headers)
b64=$(printf 'x-access-token:%s' "$REAL_GH" | base64 -w0)
t_eq "curl: Basic password replaced" "Basic $b64" "$(echo "$out" | hdr authorization)"
out=$(curl -s -m 5 --cacert "$CA" -H "Authorization: Bearer evil" -H "Authorization: Bearer $SURR_GH" https://echo.test/echo-headers)
t_eq "curl: duplicate Authorization collapses to the real one" "Bearer $REAL_GH" "$(echo "$out" | hdr authorization)"
out=$(curl -s -m 5 --cacert "$CA" -H "X-Api-Key: $SURR_KEY" -H "X-Api-Other: k=$SURR_KEY" https://other.test/echo-headers)
t_eq "curl: glob header patterns, two headers" "$REAL_KEY
k=$REAL_KEY" "$(echo "$out" | hdr x-api-key; echo "$out" | hdr x-api-other)"
out=$(curl -s -m 5 --cacert "$CA" -H "X-Api-Key: $SURR_KEY" -d "body $SURR_KEY" "https://echo.test/echo-headers?q=$SURR_KEY")
t_contains "curl: the URL keeps the surrogate" "$out" "q=$SURR_KEY"

out=$(REQUESTS_CA_BUNDLE="$CA" /usr/bin/python3 -c '
import requests, sys
r = requests.get("https://echo.test/echo-headers", headers={"Authorization": "token " + sys.argv[1]}, timeout=5)
print([v for k, v in r.json()["headers"] if k.lower() == "authorization"][0])' "$SURR_GH")
t_eq "python requests: replaced" "token $REAL_GH" "$out"

t_logged "log: [masked: 1]" "^allowed GET https://echo.test/echo-headers -> 200 \[masked: 1\]$"
t_logged "log: [masked: 2]" "^allowed GET https://other.test/echo-headers -> 200 \[masked: 2\]$"
t_logged "log: STRIPPED line" "^STRIPPED header 'authorization' from GET https://echo.test/echo-headers (foreign credential blocked)$"
t_logged "log: [dropped: 1]" "^allowed GET https://echo.test/echo-headers -> 200 \[dropped: 1\]$"
t_logged "log: COLLAPSED line" "^COLLAPSED 2 duplicate 'authorization' headers in GET https://echo.test/echo-headers"

out=$("$AIRLOCK" check --allowlist "$T_DIR/allow.yaml" --replacements "$T_DIR/repl.json")
t_check "airlock check accepts the replacements" test $? -eq 0
t_contains "airlock check lists scopes" "$out" "echo.test"
case "$out" in *"$REAL_GH"*|*"$REAL_KEY"*) t_fail "airlock check printed a real value" ;; *) t_ok "airlock check prints no real value" ;; esac
printf '{"s": {"value": "%s", "scopes": ["a"], "headers": ["b"], "bogus": 1}}' "$REAL_KEY" > "$T_DIR/bad.json"
out=$("$AIRLOCK" check --replacements "$T_DIR/bad.json" 2>&1); rc=$?
t_eq "airlock check rejects an unknown key" "1" "$rc"
t_contains "error says file:line:col" "$out" "bad.json:1:"
case "$out" in *"$REAL_KEY"*) t_fail "error printed a real value" ;; *) t_ok "error prints no real value" ;; esac

# an invalid replacements file is a startup error
out=$("$AIRLOCK" run --upstream-dns 127.0.0.53 --allowlist "$T_DIR/allow.yaml" --replacements "$T_DIR/bad.json" \
      --log /dev/null --listen-dns off --listen-http off --listen-https off 2>&1); rc=$?
t_eq "invalid replacements: airlock run exits 1" "1" "$rc"

t_stop_airlock
for v in "$REAL_GH" "$REAL_KEY"; do
    if grep -q -- "$v" "$T_DIR/net.log" "$T_DIR/airlock.err"; then
        t_fail "a real value appears in the log or stderr"
    else
        t_ok "real value absent from the log and stderr"
    fi
done
t_done
