#!/bin/bash
# The documentation's commands, run as pasted, against their shown outputs (issue: a newcomer
# pastes the docs' commands; they must work and print what the docs show).
#
# 1. Every "$ command" block of README.md, docs/*.md, container/README.md and
#    container/k8s/README.md, by docs_check.py (its header gives the convention: HTML-comment
#    markers above a block say which file it is, where it runs, or why it is not checked),
#    with `airlock` on PATH being the built binary. Prints each block checked, each block not
#    checked with the reason, and the shell blocks nothing runs.
# 2. docs/cli.md "Trying it on loopback" (```sh) as pasted (its /tmp/al moved under the test's
#    directory), with the `airlock health` block of docs/cli.md run against it before its
#    last line stops it.
# 3. The README's quick start: container/example/demo.sh (ports from DEMO_*_PORT), then each
#    command its banner prints, then SIGTERM: it must stop airlock and its upstream.
# The agentbox example of docs/policy-formats.md must be the file tests/addons/data uses.
# The blocks that change the machine (bind 10.0.0.1, write /etc, /var/log, /usr/local, nft,
# the trust store, example.com) run in test_docs_machine.sh, container/README.md's podman
# blocks in test_docs_container.sh: each marked `checked:` with the test's path.
# Runs in private namespaces: no internet, so the demo's "example.com" answers 502.
. "$(dirname "$0")/lib.sh"
t_enter_netns "$@"
SRC=$AIRLOCK_SRC
mkdir -p "$T_DIR/bin"
ln -s "$AIRLOCK" "$T_DIR/bin/airlock"
export PATH="$T_DIR/bin:$PATH"

# ---- 1. the "$ command" blocks ----
docs=(README.md)
for f in "$SRC"/docs/*.md; do docs+=("docs/${f##*/}"); done
docs+=(container/README.md container/k8s/README.md)
(cd "$SRC" && "$PY" "$SRC/tests/integration/docs_check.py" "$SRC" "$T_DIR/docs" "${docs[@]}") \
    > "$T_DIR/docs.out" 2>&1
rc=$?
cat "$T_DIR/docs.out"
t_eq "every shown command output matches (docs_check.py)" 0 "$rc"
t_check "every shell block of the docs is run, checked elsewhere or marked not checked (why)" \
    grep -q ' 0 shell blocks not run (unmarked)' "$T_DIR/docs.out"
n=$(grep -c '^ok - ' "$T_DIR/docs.out")
if [ "$n" -ge 20 ]; then t_ok "$n commands checked"; else t_fail "only $n commands checked"; fi
t_check "docs/policy-formats.md's agentbox example is tests/addons/data/agentbox's file" \
    cmp "$T_DIR/docs/docs_policy_formats_md/.agentbox/config.toml" \
    "$SRC/tests/addons/data/agentbox/.agentbox/config.toml"

# ---- 2. docs/cli.md "Trying it on loopback", as pasted ----
block() { # the ```sh block after the heading $1 in docs/cli.md
    awk -v h="$1" 'index($0, h) == 1 {f=1} f && /^```sh/ {g=1; next} g && /^```/ {exit} g' \
        "$SRC/docs/cli.md"
}
block '### Trying it on loopback' | sed "s#/tmp/al#$T_DIR/al#g" > "$T_DIR/loopback.sh"
# shellcheck disable=SC2016 # a literal heading
block '## `airlock health`' > "$T_DIR/health.sh"
# shellcheck disable=SC2016 # a literal line of the block
t_check "the loopback block ends by stopping what it started" \
    grep -q '^kill \$AIRLOCK_PID \$UP_PID' "$T_DIR/loopback.sh"
# the block, with the health block inserted before its last line (the kill)
{ sed '$d' "$T_DIR/loopback.sh"; cat "$T_DIR/health.sh"; tail -n 1 "$T_DIR/loopback.sh"; } \
    > "$T_DIR/loopback+health.sh"
(cd "$T_DIR" && timeout 60 bash -e "$T_DIR/loopback+health.sh") > "$T_DIR/loopback.out" \
    2> "$T_DIR/loopback.err"
rc=$?
t_eq "the loopback block runs to its end" 0 "$rc"
out=$(cat "$T_DIR/loopback.out")
t_eq "loopback: first line 200" 200 "$(head -n 1 "$T_DIR/loopback.out")"
t_contains "loopback: 403 JSON for evil.example" "$out" \
    '{"error": "blocked_by_network_allowlist", "host": "evil.example"'
t_contains "loopback: 403 JSON over TLS" "$out" \
    '{"error": "blocked_by_network_allowlist", "host": "localhost"'
t_check "loopback: dig answers 127.0.0.1" grep -qx '127.0.0.1' "$T_DIR/loopback.out"
t_check "loopback: the log shows the allowed request" \
    grep -qx 'allowed GET http://127.0.0.1:18081/ -> 200' "$T_DIR/loopback.out"
t_check "the health block says healthy" grep -qx healthy "$T_DIR/loopback.out"
t_check "loopback: airlock stopped" until_ok '! pgrep -f -- "--log net.log --confdir ca" >/dev/null' 10
t_check "loopback: its upstream stopped" until_ok '! pgrep -f "http.server 18081" >/dev/null' 10

# ---- 2b. docs/sandboxes.md "Trying it on loopback", as pasted ----
awk '/^### Trying it on loopback/ {f=1} f && /^```sh/ {g=1; next} g && /^```/ {exit} g' \
    "$SRC/docs/sandboxes.md" | sed "s#/tmp/sbx#$T_DIR/sbx#g" > "$T_DIR/sandboxes.sh"
(cd "$T_DIR" && timeout 60 bash -e "$T_DIR/sandboxes.sh") > "$T_DIR/sandboxes.out" \
    2> "$T_DIR/sandboxes.err"
t_eq "sandboxes.md: the loopback block runs to its end" 0 "$?"
out=$(cat "$T_DIR/sandboxes.out")
t_contains "sandboxes.md: conv42's policy answers 403 for evil.example" "$out" \
    '{"error": "blocked_by_network_allowlist", "host": "evil.example"'
t_contains "sandboxes.md: 127.0.0.7 is in no sandbox" "$out" "closed: 127.0.0.7 is in no sandbox"
t_check "sandboxes.md: conv42's own log starts with a TASK START line" \
    grep -q '^=== TASK START ' <(head -n 1 "$T_DIR/sbx/dir/conv42/network-sandbox.log")
t_check "sandboxes.md: conv42's own log has the 403" \
    grep -qx 'BLOCKED GET http://evil.example/ -> 403' "$T_DIR/sbx/dir/conv42/network-sandbox.log"
t_check "sandboxes.md: the host log has the stray source" \
    grep -qx 'BLOCKED - - -> closed (source 127.0.0.7 is in no sandbox)' "$T_DIR/sbx/host.log"
t_check "sandboxes.md: airlock stopped" \
    until_ok '! pgrep -f -- "--sandboxes dir --log host.log" >/dev/null' 10

# ---- 3. the README's quick start: demo.sh and its banner's commands ----
export DEMO_DNS_PORT=25400 DEMO_HTTP_PORT=25401 DEMO_HTTPS_PORT=25402 DEMO_UPSTREAM_PORT=25403
export DEMO_DIR=$T_DIR/demo
sh "$SRC/container/example/demo.sh" > "$T_DIR/demo.out" 2>&1 &
DEMO_PID=$!
T_PIDS+=("$DEMO_PID")
# shellcheck disable=SC2016 # expanded by until_ok
if ! until_ok 'grep -q "^Ctrl-C to stop" "$T_DIR/demo.out"' 30; then
    cat "$T_DIR/demo.out"
    t_fail "demo.sh printed its banner"
else
    t_ok "demo.sh printed its banner"
    t_check "banner: no ../ in paths" bash -c "! grep -q '\.\./' '$T_DIR/demo.out'"
    t_check "banner: names the ports" grep -q "DNS :25400 UDP+TCP, HTTP :25401, HTTPS :25402" \
        "$T_DIR/demo.out"
    # each command the banner prints, as printed (tail -f aside), and what its comment says
    expect=(
        'dig +short*anything.example A|^127\.0\.0\.1$'
        'dig @127.0.0.1 -p 25400 example.com AAAA|status: NOERROR.*ANSWER: 0'
        "curl -s http://127.0.0.1:25401/ -H 'Host: evil.example'|\"host\": \"evil.example\".*not in the network allowlist"
        "curl -s -X DELETE|\"error\": \"blocked_by_network_allowlist\""
        "curl -si http://127.0.0.1:25401/ -H 'Host: example.com'|^HTTP/1.1 502"
        "*-H 'Host: 127.0.0.1:25403'|^hello from the demo's local HTTPS upstream$"
        "*https://evil.example:25402/|\"host\": \"evil.example\""
        "*https://example.com:25402/|Port 25402 is not allowed for this host"
        "*explain --allowlist*|^allowed by url_prefixes\[0\]"
    )
    sed -n 's/^  \(dig\|curl\|\/\)/\1/p' "$T_DIR/demo.out" | sed 's/  *# .*$//' \
        > "$T_DIR/banner.cmds"
    t_eq "banner: 9 commands to try" 9 "$(wc -l < "$T_DIR/banner.cmds")"
    while IFS= read -r cmd; do
        got=$(cd "$T_DIR" && timeout 20 bash -c "$cmd" 2>&1)
        hit=""
        for e in "${expect[@]}"; do
            # shellcheck disable=SC2053 # the left part is a glob on purpose
            if [[ "$cmd" == ${e%%|*}* ]]; then hit=${e#*|}; break; fi
        done
        if [ -z "$hit" ]; then t_fail "banner: no expectation for: $cmd"; continue; fi
        if printf '%s\n' "$got" | tr '\n' ' ' | grep -Eq -- "$hit" ||
            printf '%s\n' "$got" | grep -Eq -- "$hit"; then
            t_ok "banner: $cmd"
        else
            t_fail "banner: $cmd: no /$hit/ in [$got]"
        fi
    done < "$T_DIR/banner.cmds"
fi
kill -TERM "$DEMO_PID"
wait "$DEMO_PID"
t_eq "demo.sh exits 0 on SIGTERM" 0 "$?"
t_check "demo.sh stopped airlock and its upstream" \
    until_ok "! pgrep -f -- \"$DEMO_DIR/\" >/dev/null" 10
t_done
