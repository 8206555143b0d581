#!/bin/bash
# The engine's two directions run independently (issue 15): an upstream that answers before
# reading the whole request body (401, 413), one that streams an answer to each piece of the
# body as it arrives, Expect: 100-continue both ways, and pipelined requests that keep their
# order while each is decided on its own. Request bytes are parsed as a request only where the
# previous request's framing says one starts: no /smuggled ever reaches an upstream.
#
# Addresses in the test's own namespace: airlock 127.0.0.1; hostile_upstream.py on 127.0.0.3
# (host.test, :80 and :443).
. "$(dirname "$0")/lib.sh"
t_enter_netns "$@"
HERE=$(cd "$(dirname "$0")" && pwd)
ip addr add 127.0.0.3/8 dev lo 2>/dev/null || true
printf 'domains: ["host.test"]\n' > "$T_DIR/allow.yaml"
t_start_resolver --address=/host.test/127.0.0.3 || exit 1
t_upstream_ca
t_upstream_cert "DNS:host.test" "$T_DIR/up"
UPLOG=$T_DIR/up.log
: > "$UPLOG"
"$PY" "$HERE/hostile_upstream.py" 127.0.0.3 "$UPLOG" --http 80 \
    --https 443 "$T_DIR/up.pem" "$T_DIR/up.key" > "$T_DIR/up.err" 2>&1 &
T_PIDS+=($!)
t_wait_port 127.0.0.3 80 && t_wait_port 127.0.0.3 443 || exit 1
t_start_airlock "$T_DIR/allow.yaml" --upstream-ca "$T_DIR/upca.pem" \
    --allow-upstream-cidr 127.0.0.3/32 --client-idle-timeout 5 --upstream-timeout 5 || exit 1
CA="$T_DIR/confdir/mitmproxy-ca-cert.pem"
DC="$HERE/duplex_client.py"
up_has() { # up_has 'ERE' [count]: waits up to 20 s for a line of the upstream's log
    local i
    for i in $(seq 1 400); do
        [ "$(grep -cE -- "$1" "$UPLOG")" -ge "${2:-1}" ] && return 0
        sleep 0.05
    done
    return 1
}

for scheme in plain tls; do
    port=80
    tls=()
    if [ $scheme = tls ]; then port=443; tls=(--tls "$CA"); fi
    # an early complete 413: the body still flows to the upstream that keeps reading, and the
    # next request on the connection is served
    n0=$(grep -c '^body 2097152$' "$UPLOG")
    out=$(timeout 20 "$PY" "$DC" early 127.0.0.1 $port host.test /early?status=413 2097152 "${tls[@]}")
    t_eq "$scheme: early 413, then the next request on the connection" "413:early 200:ok eof" "$out"
    up_has '^body 2097152$' $((n0 + 1))
    t_check "$scheme: the rest of the body (2 MiB) still reached the upstream" test $? -eq 0
    # an early 401 from an upstream that closes: the client gets it and the connection ends
    out=$(timeout 20 "$PY" "$DC" early 127.0.0.1 $port host.test '/early?status=401&close=1' 2097152 "${tls[@]}")
    case "$out" in
        "401:early eof" | "401:early send-failed eof") t_ok "$scheme: early 401 and a close: answered, then the end ($out)" ;;
        *) t_fail "$scheme: early 401 and a close: [$out]" ;;
    esac
    # the answer to each piece of the body as it arrives
    t0=$(date +%s%N)
    out=$(timeout 20 "$PY" "$DC" echo 127.0.0.1 $port host.test 20 "${tls[@]}")
    t_eq "$scheme: a streaming echo, 20 round trips on one request" "echo 20 ok" "$out"
    # Expect: 100-continue both ways
    out=$(timeout 20 "$PY" "$DC" expect 127.0.0.1 $port host.test /expect 5000 "${tls[@]}")
    t_eq "$scheme: Expect: the upstream's 100 reaches the client, then the body goes" \
        "100 200:got 5000" "$out"
    up_has '^sent 100$'
    t_check "$scheme: the upstream saw the client's Expect" test $? -eq 0
    out=$(timeout 20 "$PY" "$DC" expect 127.0.0.1 $port host.test /expect-reject 5000 "${tls[@]}")
    t_eq "$scheme: Expect: the upstream refuses before the body, the client never sends it" "417 " "$out"
    # pipelining: order kept, each decided on its own
    out=$(timeout 20 "$PY" "$DC" pipeline 127.0.0.1 $port host.test host.test evil.test host.test evil.test "${tls[@]}")
    t_eq "$scheme: pipelined allowed/blocked requests answered in order" "200 403 200 403" "$out"
done
t_eq "no /smuggled request ever reached the upstream" "0" "$(grep -c smuggled "$UPLOG")"
t_logged "the early 413 is logged as the upstream's answer" '^allowed POST http://host.test/early?status=413 -> 413$'
kill -0 "$AIRLOCK_PID" 2>/dev/null
t_check "airlock alive" test $? -eq 0
t_stop_airlock
t_eq "SIGTERM: exit 0" "0" "$?"
t_done
