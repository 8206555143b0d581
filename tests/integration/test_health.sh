#!/bin/bash
# `airlock health`: every named listener must really answer (HTTP status line, TLS handshake,
# DNS A answer) within 1 s in total; otherwise exit 1 with a one-line reason. Runs against a
# real airlock in a private network namespace, plus silent and wrong-protocol listeners.
# No timing is asserted here (a loaded or ASan machine is slow): a silent listener must give
# "timed out", and every check must end (a 30 s guard catches a hang). The latency is
# measured by tests/bench/health_bench.sh.
. "$(dirname "$0")/lib.sh"
t_enter_netns "$@"

if "$AIRLOCK" health --help 2>&1 | grep -q "unknown command"; then
    echo "FAIL: $AIRLOCK has no 'health' command (px_health_main is not wired into px_main.c)"
    exit 1
fi

# Runs `airlock health ARGS...`; sets H_RC and H_ERR (stderr). A check still running after
# 30 s is a hang (health's own budget is 1 s): exit 124 from timeout.
h_run() {
    H_ERR=$(timeout 30 "$AIRLOCK" health "$@" 2>&1 >/dev/null)
    H_RC=$?
}
# h_fails "description" "expected reason" ARGS...: exit 1, one line naming the reason.
h_fails() {
    local d=$1 why=$2; shift 2
    h_run "$@"
    t_eq "$d: exit 1" 1 "$H_RC"
    t_contains "$d: reason" "$H_ERR" "$why"
    t_eq "$d: one line" 1 "$(printf '%s\n' "$H_ERR" | wc -l)"
}

echo 'domains: ["*"]' > "$T_DIR/allow.yaml"

# --- nothing listening ---
h_fails "no airlock" "airlock health: dns 127.0.0.1:53: no answer to an A query: Connection refused"

# --- a full airlock on the default ports ---
t_start_airlock "$T_DIR/allow.yaml" || exit 1
h_run
t_eq "defaults (127.0.0.1:53, :80, :443) are healthy" "0 " "$H_RC $H_ERR"
h_run --http 127.0.0.1:80 --https 127.0.0.1:443 --dns 127.0.0.1:53
t_eq "all three named" "0 " "$H_RC $H_ERR"
h_run --dns 127.0.0.1:53
t_eq "only dns" "0 " "$H_RC $H_ERR"
h_run --https 127.0.0.1:80
t_eq "TLS on the HTTP port (airlock sniffs the handshake)" "0 " "$H_RC $H_ERR"

# Probes stay inside the proxy: one 400 line (no Host) and one DNS line, never an upstream
# attempt, even with an allowlist that allows everything.
t_logged "http probe logged as a 400 pre-check" '^BLOCKED GET - -> 400 (malformed request: missing Host header)$'
t_logged "dns probe logged" '^DNS A airlock-health.invalid -> 127.0.0.1$'
if grep -q '^ERROR' "$T_DIR/net.log"; then t_fail "a probe went upstream: $(grep '^ERROR' "$T_DIR/net.log")"
else t_ok "no probe went upstream"; fi

# --- wrong ports and wrong protocols ---
h_fails "wrong http port" "airlock health: http 127.0.0.1:81: connect: Connection refused" \
    --http 127.0.0.1:81
h_fails "http probe on the TLS port" "http 127.0.0.1:443: connection closed without an answer" \
    --http 127.0.0.1:443
h_fails "dns probe on a port without DNS" "dns 127.0.0.1:80: no answer to an A query" \
    --dns 127.0.0.1:80
h_fails "second listener wrong" "https 127.0.0.1:444: connect: Connection refused" \
    --http 127.0.0.1:80 --https 127.0.0.1:444

# Listeners that accept but never answer, and ones that answer nonsense.
"$PY" - > /dev/null 2>&1 <<'PY' &
import socket, threading, time
def silent_tcp(port):
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port)); s.listen(16)
    keep = []
    while True:
        c, _ = s.accept(); keep.append(c)
def garbage_tcp(port):
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port)); s.listen(16)
    while True:
        c, _ = s.accept()
        try:
            c.recv(4096); c.sendall(b"SSH-2.0-OpenSSH_9.2\r\n")
        finally:
            c.close()
def silent_udp(port):
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(("127.0.0.1", port))
    while True:
        u.recv(4096)
def wrong_id_udp(port):
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(("127.0.0.1", port))
    while True:
        q, peer = u.recvfrom(4096)
        r = bytearray(q); r[0] ^= 0xff; r[2] |= 0x80
        u.sendto(bytes(r), peer)
def nxdomain_udp(port):
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(("127.0.0.1", port))
    while True:
        q, peer = u.recvfrom(4096)
        r = bytearray(q); r[2] |= 0x80; r[3] = (r[3] & 0xf0) | 3
        u.sendto(bytes(r), peer)
for f, p in ((silent_tcp, 8001), (garbage_tcp, 8002), (silent_udp, 8003), (wrong_id_udp, 8004),
             (nxdomain_udp, 8005)):
    threading.Thread(target=f, args=(p,), daemon=True).start()
time.sleep(600)
PY
T_PIDS+=($!)
t_wait_port 127.0.0.1 8001 && t_wait_port 127.0.0.1 8002 &&
    until_ok '[ "$(ss -Hlun "( sport >= :8003 and sport <= :8005 )" | wc -l)" -eq 3 ]' ||
    t_fail "the silent and wrong-protocol listeners did not all start"
h_fails "http: accepts, never answers" "http 127.0.0.1:8001: no answer to GET /: timed out" \
    --http 127.0.0.1:8001
h_fails "https: accepts, never answers" "https 127.0.0.1:8001: TLS handshake: timed out" \
    --https 127.0.0.1:8001
h_fails "http: not HTTP" "http 127.0.0.1:8002: the answer to GET / is not an HTTP status line" \
    --http 127.0.0.1:8002
h_fails "https: not TLS" "https 127.0.0.1:8002: TLS handshake failed" --https 127.0.0.1:8002
h_fails "dns: silent" "dns 127.0.0.1:8003: no answer to an A query: timed out" \
    --dns 127.0.0.1:8003
h_fails "dns: answers with another ID" "dns 127.0.0.1:8004: no answer to an A query: timed out" \
    --dns 127.0.0.1:8004
h_fails "dns: NXDOMAIN is not healthy" "dns 127.0.0.1:8005: answer has opcode 0, rcode 3" \
    --dns 127.0.0.1:8005
h_fails "the budget is shared: a good probe, then a silent one" \
    "http 127.0.0.1:8001: no answer to GET /: timed out" \
    --dns 127.0.0.1:53 --https 127.0.0.1:443 --http 127.0.0.1:8001

# --- one listener off ---
t_stop_airlock
t_start_airlock "$T_DIR/allow.yaml" --listen-https off || exit 1
h_fails "https listener off" "airlock health: https 127.0.0.1:443: connect: Connection refused"
h_run --http 127.0.0.1:80 --dns 127.0.0.1:53
t_eq "the listeners that are on still pass" "0 " "$H_RC $H_ERR"
t_stop_airlock

# --- usage errors ---
h_run --bogus
t_eq "unknown flag: exit 2" 2 "$H_RC"
t_contains "unknown flag: says so" "$H_ERR" "unexpected argument '--bogus'"
h_run --http
t_eq "missing value: exit 2" 2 "$H_RC"
h_run --dns localhost:53
t_eq "a name instead of an address: exit 2 (no resolver is ever used)" 2 "$H_RC"
h_run --http 127.0.0.1:0
t_eq "port 0: exit 2" 2 "$H_RC"
h_run --http off
t_eq "off: exit 2" 2 "$H_RC"
h_run --help
t_eq "--help: exit 0" 0 "$H_RC"

t_done
