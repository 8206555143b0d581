#!/bin/bash
# Issue 33 part 2: real values that airlock fetches itself from AWS Secrets Manager
# (GetSecretValue, plain and json_key) and SSM (GetParameter), against a local stand-in that
# verifies each request's SigV4 signature with botocore (aws_secrets_standin.py). Shown here:
# the fetched values reach a TLS upstream that echoes the headers it received; bad credentials
# stop start-up naming the entry; throttling at start-up is retried; a changed value is picked
# up by the background refresh; a failing refresh keeps the cached value and says so; a SIGHUP
# whose fetch fails keeps the previous configuration; a source that left the file is no longer
# fetched; no real value reaches the log or stderr.
. "$(dirname "$0")/lib.sh"
t_enter_netns "$@"
HERE=$(cd "$(dirname "$0")" && pwd)
"$PY" -c 'import botocore' 2>/dev/null || t_skip python3-botocore "python3-botocore is not installed"

REAL_SM1="sk-REAL-secretsmanager-value-0001"
REAL_SM2="sk-REAL-secretsmanager-value-0002"
REAL_JK="ghp_REALjsonKEYvalueREALjsonKEYvalue0001"
REAL_SSM="xoxb-REAL-ssm-parameter-value-0001"
SURR_SM="sk-SURR-secretsmanager-0000000001"
SURR_JK="ghp_SurrogateJsonKeySurrogateJsonKey0001"
SURR_SSM="xoxb-SURR-ssm-parameter-000000001"
AKID=AKIDAIRLOCKTEST00001
SK=airlockTestSecretAccessKey0000000000000001
TOKEN=airlockTestSessionToken0001

cat > "$T_DIR/allow.yaml" <<'YAML'
domains: ["echo.test"]
YAML
cat > "$T_DIR/repl.json" <<JSON
{
  "$SURR_SM": {"value_from": {"aws_secrets_manager": {"secret_id": "prod/api", "region": "us-east-1"}},
               "scopes": ["echo.test"], "headers": ["X-Api-Key"]},
  "$SURR_JK": {"value_from": {"aws_secrets_manager": {"secret_id": "prod/json", "json_key": "token", "refresh_seconds": 600}},
               "scopes": ["echo.test"], "headers": ["Authorization"]},
  "$SURR_SSM": {"value_from": {"aws_ssm": {"name": "/app/slack", "with_decryption": true}},
                "scopes": ["echo.test"], "headers": ["X-Slack"]}
}
JSON
# airlock check fetches nothing: it accepts the AWS sources' shape and names them
out=$("$AIRLOCK" check --allowlist "$T_DIR/allow.yaml" --replacements "$T_DIR/repl.json" 2>&1)
t_eq "airlock check accepts AWS sources without fetching them" 0 "$?"
t_contains "... and names the Secrets Manager source" "$out" "aws_secrets_manager"
t_contains "... and the SSM one" "$out" "aws_ssm"
state() { # state SM1-or-2 throttle fail malformed
    local v=$REAL_SM1
    [ "$1" = 2 ] && v=$REAL_SM2
    cat > "$T_DIR/aws_state.json.new" <<JSON
{"keys": {"$AKID": ["$SK", "$TOKEN"]}, "region": "us-east-1",
 "secrets": {"prod/api": "$v", "prod/json": "{\"token\": \"$REAL_JK\", \"other\": \"x\"}"},
 "params": {"/app/slack": "$REAL_SSM"}, "throttle": $2, "fail": $3, "malformed": $4}
JSON
    mv "$T_DIR/aws_state.json.new" "$T_DIR/aws_state.json"
}
state 1 0 0 0
printf '[airlock]\naws_access_key_id = %s\naws_secret_access_key = %s\naws_session_token = %s\n' \
    "$AKID" "$SK" "$TOKEN" > "$T_DIR/credentials"

ip addr add 127.0.0.3/8 dev lo 2>/dev/null || true
ip addr add 127.0.0.4/8 dev lo 2>/dev/null || true
t_start_resolver --address=/echo.test/127.0.0.3 --address=/aws.test/127.0.0.4
t_upstream_ca
t_upstream_cert "DNS:echo.test" "$T_DIR/up"
t_upstream_cert "DNS:aws.test" "$T_DIR/aws"
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
"$PY" "$HERE/aws_secrets_standin.py" 127.0.0.4 443 "$T_DIR/aws.pem" "$T_DIR/aws.key" \
    "$T_DIR/aws_state.json" "$T_DIR/aws_requests.log" > "$T_DIR/standin.err" 2>&1 &
T_PIDS+=($!)
t_wait_port 127.0.0.3 443 || exit 1
t_wait_port 127.0.0.4 443 || exit 1

export AWS_ENDPOINT_URL=https://aws.test AWS_REGION=us-east-1
unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN AWS_PROFILE \
    AWS_SHARED_CREDENTIALS_FILE AWS_ENDPOINT_URL_SECRETS_MANAGER AWS_ENDPOINT_URL_SSM

# Wrong credentials (the environment's, a wrong secret key): the stand-in refuses the
# signature and start-up stops, naming the entry, the secret and AWS's error type.
out=$(AWS_ACCESS_KEY_ID=$AKID AWS_SECRET_ACCESS_KEY=wrong-secret AWS_SESSION_TOKEN=$TOKEN \
      "$AIRLOCK" run --upstream-dns 127.0.0.53 --allowlist "$T_DIR/allow.yaml" \
      --replacements "$T_DIR/repl.json" --log /dev/null --upstream-ca "$T_DIR/upca.pem" \
      --allow-upstream-cidr 127.0.0.4/32 --listen-dns off --listen-http off --listen-https off \
      2>&1); rc=$?
t_eq "start-up with a wrong secret key: airlock run exits 1" "1" "$rc"
t_contains "start-up error names the entry, the secret and the cause" "$out" \
    "repl.json:2:56: entry[0].value_from.aws_secrets_manager: cannot fetch prod/api: AWS answered HTTP 400, InvalidSignatureException"
t_logged_aws() { grep -q -- "$1" "$T_DIR/aws_requests.log"; }
t_check "the stand-in saw the bad signature" t_logged_aws "GetSecretValue prod/api -> 400 InvalidSignatureException"

# The right credentials, from a credentials file and a profile; AWS throttles the first two
# requests: start-up tries again and comes up.
: > "$T_DIR/aws_requests.log"
state 1 2 0 0
export AWS_SHARED_CREDENTIALS_FILE=$T_DIR/credentials AWS_PROFILE=airlock
export AIRLOCK_TEST_REFRESH_MS=1000
t_start_airlock "$T_DIR/allow.yaml" --replacements "$T_DIR/repl.json" --scrub-responses off \
    --upstream-ca "$T_DIR/upca.pem" --allow-upstream-cidr 127.0.0.3/32 \
    --allow-upstream-cidr 127.0.0.4/32 || exit 1
unset AIRLOCK_TEST_REFRESH_MS
CA="$T_DIR/confdir/mitmproxy-ca-cert.pem"
t_eq "throttled twice, then served: 2 ThrottlingException answers" "2" \
    "$(grep -c ThrottlingException "$T_DIR/aws_requests.log")"
t_contains "stderr says it tries again" "$(cat "$T_DIR/airlock.err")" \
    "AWS answered HTTP 400, ThrottlingException; trying again"
t_check "the stand-in served GetParameter" t_logged_aws "AmazonSSM.GetParameter /app/slack -> 200"

hdr() { # hdr NAME < JSON -> values of that header, one per line
    "$PY" -c 'import json,sys; d=json.load(sys.stdin); [print(v) for k,v in d["headers"] if k.lower()==sys.argv[1].lower()]' "$1"
}
fetch() { # fetch -> "X-Api-Key|Authorization|X-Slack" as the upstream received them
    local out
    out=$(curl -s -m 5 --cacert "$CA" -H "X-Api-Key: $SURR_SM" -H "X-Slack: $SURR_SSM" \
          -H "Authorization: Bearer $SURR_JK" https://echo.test/echo-headers)
    printf '%s|%s|%s' "$(printf '%s' "$out" | hdr x-api-key)" \
        "$(printf '%s' "$out" | hdr authorization)" "$(printf '%s' "$out" | hdr x-slack)"
}
t_eq "Secrets Manager, json_key and SSM values reach the upstream" \
    "$REAL_SM1|Bearer $REAL_JK|$REAL_SSM" "$(fetch)"
t_logged "log: [masked: 3]" "^allowed GET https://echo.test/echo-headers -> 200 \[masked: 3\]$"

# The secret rotates: the background refresh (every second here) picks it up and reloads.
state 2 0 0 0
t_check "the refresh notices the change" \
    until_ok 'grep -q "a value fetched from AWS changed" "$T_DIR/airlock.err"'
t_check "and the new value goes upstream" until_ok '[ "$(fetch)" = "$REAL_SM2|Bearer $REAL_JK|$REAL_SSM" ]'

# AWS fails (500): the refresh says so, once per try, and the cached value stays in use.
state 2 0 1000 0
t_check "a failing refresh is logged" \
    until_ok 'grep -q "fetch failed: AWS answered HTTP 500, InternalServiceError; the cached value stays" "$T_DIR/airlock.err"'
t_eq "the cached value stays in use" "$REAL_SM2|Bearer $REAL_JK|$REAL_SSM" "$(fetch)"

# A SIGHUP fetches anew; a malformed answer fails that load, naming the entry; the previous
# configuration stays.
state 2 0 0 1000
kill -HUP "$AIRLOCK_PID"
t_check "the reload fails naming the entry and the cause" \
    until_ok 'grep -q "entry\[0\].value_from.aws_secrets_manager: cannot fetch prod/api: HTTP 200 but the answer is not a JSON object (reload failed; keeping the previous configuration)" "$T_DIR/airlock.err"'
t_eq "after the failed SIGHUP the previous values stay" \
    "$REAL_SM2|Bearer $REAL_JK|$REAL_SSM" "$(fetch)"
t_check "airlock still runs" kill -0 "$AIRLOCK_PID"

# AWS answers again: a SIGHUP goes through.
state 2 0 0 0
n=$(grep -c "allowlist reloaded" "$T_DIR/airlock.err")
kill -HUP "$AIRLOCK_PID"
t_check "a SIGHUP with AWS answering reloads" \
    until_ok '[ "$(grep -c "allowlist reloaded" "$T_DIR/airlock.err")" -gt "$n" ]'
t_eq "values after the reload" "$REAL_SM2|Bearer $REAL_JK|$REAL_SSM" "$(fetch)"

# The SSM entry leaves the file: after the SIGHUP its parameter is no longer fetched (three
# refreshes of the others come and go without one GetParameter), and its surrogate stays.
"$PY" - "$T_DIR/repl.json" <<'PYX'
import json, sys
d = json.load(open(sys.argv[1]))
d = {k: v for k, v in d.items() if "aws_ssm" not in v["value_from"]}
json.dump(d, open(sys.argv[1], "w"))
PYX
n=$(grep -c "allowlist reloaded" "$T_DIR/airlock.err")
kill -HUP "$AIRLOCK_PID"
t_check "the SIGHUP without the SSM entry reloads" \
    until_ok '[ "$(grep -c "allowlist reloaded" "$T_DIR/airlock.err")" -gt "$n" ]'
: > "$T_DIR/aws_requests.log"
t_check "the remaining sources go on being refreshed" \
    until_ok '[ "$(grep -c "GetSecretValue prod/api -> 200" "$T_DIR/aws_requests.log")" -ge 3 ]'
# (counted after the first refresh: a request the reload cut off may still reach the log)
t_eq "the removed source is not fetched any more" "0" \
    "$(awk '/GetSecretValue prod\/api -> 200/ {seen = 1; next} seen && /GetParameter/' \
       "$T_DIR/aws_requests.log" | wc -l)"
t_eq "its surrogate is no longer replaced" "$REAL_SM2|Bearer $REAL_JK|$SURR_SSM" "$(fetch)"

t_stop_airlock; rc=$?
t_eq "airlock stops cleanly (SIGTERM: status 0; under ASan no leak)" "0" "$rc"
for v in "$REAL_SM1" "$REAL_SM2" "$REAL_JK" "$REAL_SSM" "$SK" "$TOKEN"; do
    if grep -q -- "$v" "$T_DIR/net.log" "$T_DIR/airlock.err"; then
        t_fail "a real value or credential appears in the log or stderr"
    else
        t_ok "real value absent from the log and stderr"
    fi
done
case "$out" in *REAL*|*wrong-secret*) t_fail "start-up error printed a secret" ;;
    *) t_ok "start-up error prints no secret" ;; esac
t_done
