#!/bin/bash
# Issue 33 part 2: real values from where operators keep them. A masked entry whose real value
# comes from airlock's environment ("value_from": {"env": ...}) and one from a file
# ("value_from": {"file": ...}) reach a TLS upstream that echoes the headers it received; a
# SIGHUP after the file changed swaps in the new value; a SIGHUP with the file gone keeps the
# old value and says why on stderr (the entry and the file, never a value); a missing
# variable stops start-up. No real value ever reaches the network log or stderr.
. "$(dirname "$0")/lib.sh"
t_enter_netns "$@"
HERE=$(cd "$(dirname "$0")" && pwd)

REAL_ENV="sk-ant-REAL-from-env-0001"
SURR_ENV="sk-ant-SURR-from-env-0001"
REAL_FILE1="ghp_REALfromFILEoneREALfromFILEone0001"
REAL_FILE2="ghp_REALfromFILEtwoREALfromFILEtwo0002"
SURR_FILE="ghp_SurrogateFromFileSurrogate00000001"
cat > "$T_DIR/allow.yaml" <<'YAML'
domains: ["echo.test"]
YAML
mkdir -p "$T_DIR/secrets"
printf '%s\n' "$REAL_FILE1" > "$T_DIR/secrets/gh"
chmod 600 "$T_DIR/secrets/gh"
cat > "$T_DIR/repl.json" <<JSON
{
  "$SURR_ENV": {"value_from": {"env": "AIRLOCK_TEST_API_KEY"}, "scopes": ["echo.test"],
                "headers": ["X-Api-Key"]},
  "$SURR_FILE": {"value_from": {"file": "$T_DIR/secrets/gh"}, "scopes": ["echo.test"],
                 "headers": ["Authorization"]}
}
JSON
ip addr add 127.0.0.3/8 dev lo 2>/dev/null || true
t_start_resolver --address=/echo.test/127.0.0.3
t_upstream_ca
t_upstream_cert "DNS:echo.test" "$T_DIR/up"
cat > "$T_DIR/tls_echo.py" <<'PYX'
import ssl, sys, runpy
upstream = sys.argv[1]
sys.argv = ["upstream.py", "127.0.0.3", "443"]
import http.server
orig = http.server.ThreadingHTTPServer.get_request
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(sys.stdin.readline().strip(), sys.stdin.readline().strip())
def get_request(self):
    c, a = orig(self)
    return ctx.wrap_socket(c, server_side=True), a
http.server.ThreadingHTTPServer.get_request = get_request
runpy.run_path(upstream, run_name="__main__")
PYX
printf '%s\n%s\n' "$T_DIR/up.pem" "$T_DIR/up.key" |
    "$PY" "$T_DIR/tls_echo.py" "$HERE/upstream.py" > /dev/null 2>&1 &
T_PIDS+=($!)
t_wait_port 127.0.0.3 443 || exit 1

# A missing variable stops start-up, naming the entry and the variable.
out=$(env -u AIRLOCK_TEST_API_KEY "$AIRLOCK" run --upstream-dns 127.0.0.53 \
      --allowlist "$T_DIR/allow.yaml" --replacements "$T_DIR/repl.json" --log /dev/null \
      --listen-dns off --listen-http off --listen-https off 2>&1); rc=$?
t_eq "start-up with the variable unset: airlock run exits 1" "1" "$rc"
t_contains "start-up error names the entry and the variable" "$out" \
    "repl.json:2:55: entry[0].value_from.env: AIRLOCK_TEST_API_KEY is not set in airlock's environment"

export AIRLOCK_TEST_API_KEY=$REAL_ENV
# The upstream echoes what it got: answers are not scrubbed here (--scrub-responses off), so
# the echo shows the real value that went upstream; test_scrub.sh covers scrubbing.
t_start_airlock "$T_DIR/allow.yaml" --replacements "$T_DIR/repl.json" --scrub-responses off \
    --upstream-ca "$T_DIR/upca.pem" --allow-upstream-cidr 127.0.0.3/32 || exit 1
unset AIRLOCK_TEST_API_KEY
CA="$T_DIR/confdir/mitmproxy-ca-cert.pem"

hdr() { # hdr NAME < JSON -> values of that header, one per line
    "$PY" -c 'import json,sys; d=json.load(sys.stdin); [print(v) for k,v in d["headers"] if k.lower()==sys.argv[1].lower()]' "$1"
}
fetch() { # fetch -> "X-Api-Key value|Authorization value" as the upstream received them
    local out
    out=$(curl -s -m 5 --cacert "$CA" -H "X-Api-Key: $SURR_ENV" \
          -H "Authorization: Bearer $SURR_FILE" https://echo.test/echo-headers)
    printf '%s|%s' "$(printf '%s' "$out" | hdr x-api-key)" "$(printf '%s' "$out" | hdr authorization)"
}

t_eq "env and file values reach the upstream" "$REAL_ENV|Bearer $REAL_FILE1" "$(fetch)"
t_logged "log: [masked: 2]" "^allowed GET https://echo.test/echo-headers -> 200 \[masked: 2\]$"

# The file changes (a rotated secret): SIGHUP reads it again.
printf '%s\n' "$REAL_FILE2" > "$T_DIR/secrets/gh"
t_reload
t_check "reload accepted" until_ok 'grep -q "allowlist reloaded" "$T_DIR/airlock.err"'
t_eq "after SIGHUP the file's new value is swapped in" "$REAL_ENV|Bearer $REAL_FILE2" "$(fetch)"

# The file is gone: the reload fails and the old policy, with the old value, stays.
rm "$T_DIR/secrets/gh"
t_reload
err=$(cat "$T_DIR/airlock.err")
t_contains "stderr names the entry, the file and the reason" "$err" \
    "repl.json:4:69: entry[1].value_from.file: cannot open $T_DIR/secrets/gh: No such file or directory (reload failed; keeping the previous configuration)"
t_eq "after a failed SIGHUP the previous value stays" "$REAL_ENV|Bearer $REAL_FILE2" "$(fetch)"
t_check "airlock still runs" kill -0 "$AIRLOCK_PID"

# airlock check reads the sources too and shows where each value comes from, never the value.
printf '%s\n' "$REAL_FILE1" > "$T_DIR/secrets/gh"
out=$(AIRLOCK_TEST_API_KEY=$REAL_ENV "$AIRLOCK" check --allowlist "$T_DIR/allow.yaml" \
      --replacements "$T_DIR/repl.json" 2>&1); rc=$?
t_eq "airlock check accepts the file" "0" "$rc"
t_contains "airlock check shows the env source" "$out" "value_from env AIRLOCK_TEST_API_KEY"
t_contains "airlock check shows the file source" "$out" "value_from file $T_DIR/secrets/gh"
case "$out" in *REAL*) t_fail "airlock check printed a real value" ;; *) t_ok "airlock check prints no real value" ;; esac

t_stop_airlock
for v in "$REAL_ENV" "$REAL_FILE1" "$REAL_FILE2"; do
    if grep -q -- "$v" "$T_DIR/net.log" "$T_DIR/airlock.err"; then
        t_fail "a real value appears in the log or stderr"
    else
        t_ok "real value absent from the log and stderr"
    fi
done
t_done
