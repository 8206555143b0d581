#!/bin/bash
# HTTP (issue 3) and HTTPS (issue 4) benchmarks: airlock against the two best TLS relays Debian
# ships, nginx and HAProxy, as reverse proxies, and mitmdump 8.1.1 in reverse mode, with the
# same upstream nginx, the same clients and the same CPU placement, all in one private
# network+mount namespace (tests/integration/lib.sh). Ratios are against the better relay.
#
#   tests/bench/http_bench.sh [http|https|all]      (default all; see tests/bench/README.md)
#
# Environment: RUNS=3 (repetitions; medians are reported), DURATION=10 and WARMUP=2 (seconds
# per wrk run), CONNS=50 (wrk connections), LOW_CONNS=10 (a second keep-alive run with fewer
# connections than airlock's per-host upstream pool keeps; 0 skips it), PROXY_CPU=0 / LOAD_CPU=1 (the proxy under test
# gets one core, wrk + curl + upstream nginx + dnsmasq the other), BIG_MB=1024 (download
# size; the HTTPS download runs over HTTP/1.1 and again over HTTP/2, each forced on curl),
# NGINX_H2=0 (the nginx proxy offers HTTP/1.1 only; no HTTP/2 download for it), BIG_MAX_TIME=120 / MITM_MAX_TIME=30 (curl --max-time of the download; the rate is
# bytes received / time, so a capped mitmdump download still gives its rate), FRESH=20 (fresh
# names for the minting latency), IDLE_CONNS=1000, PROFILE=1 (perf record on airlock during
# one extra keep-alive run per protocol), NICE=-10 (renice all of it; see README), NO_MITM=1 (skip mitmdump),
# NO_HAPROXY=1 (skip HAProxy), LOAD_DETAIL=1 (the context switches and system calls wrk and
# the upstream make per request, TCP segments and each CPU's IPIs per request; 2: the calls by
# name too), PROFILE_LOAD=1 (perf record of the load CPU during each wrk run, pinned runs
# only), AIRLOCK=binary
# (default build-bench/airlock), KEEP_TEST_DIR=1 (keep the scratch dir).
#
# Addresses inside the namespace: airlock 127.0.0.1 (:53 DNS, :80, :443), upstream nginx
# 127.0.0.2 (:80, :443), dnsmasq 127.0.0.53 (*.test -> 127.0.0.2, airlock's upstream DNS),
# nginx reverse proxy 127.0.0.5 (:80, :443), mitmdump 127.0.0.6 (:80 reverse to http,
# :443 reverse to https), HAProxy 127.0.0.7 (:80, :443). Clients resolve through airlock's DNS (bench.test, fresh names) or
# /etc/hosts (bench-nginx.test, bench-mitm.test, bench-haproxy.test, upstream.test), both
# bind-mounted.
# Prints figures and ratios; never fails on a timing.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
: "${AIRLOCK:=$ROOT/build-bench/airlock}"
export AIRLOCK

MODE=${1:-all}
case "$MODE" in
    http|https|all) ;;
    counts) NO_MITM=1 ;; # conn_count.sh: system calls, wake-ups and CPU per connection / per MB
    *) sed -n '2,20p' "$0"; exit 2 ;;
esac
RUNS=${RUNS:-3}
DURATION=${DURATION:-10}
WARMUP=${WARMUP:-2}
CONNS=${CONNS:-50}
LOW_CONNS=${LOW_CONNS:-10}
PROXY_CPU=${PROXY_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
# WORKERS=N: each proxy gets N (airlock --workers N, nginx worker_processes N, HAProxy nbthread N);
# UNPINNED=1: proxies and load share every core (no taskset split)
WORKERS=${WORKERS:-1}
WORKERS_ARG=() # (none at 1: a binary from before --workers runs too, for ab.sh)
[ "$WORKERS" != 1 ] && WORKERS_ARG=(--workers "$WORKERS")
export AIRLOCK_WORKERS=$WORKERS # (airlock's own default is one loop per CPU; older ones ignore it)
if [ "${UNPINNED:-0}" = 1 ]; then PROXY_CPU="0-$(($(nproc) - 1))"; LOAD_CPU=$PROXY_CPU; fi
BIG_MB=${BIG_MB:-1024}
BIG_MAX_TIME=${BIG_MAX_TIME:-120}
MITM_MAX_TIME=${MITM_MAX_TIME:-30}
FRESH=${FRESH:-20}
IDLE_CONNS=${IDLE_CONNS:-1000}
PROFILE=${PROFILE:-0}
SYSCALLS=${SYSCALLS:-1}; command -v perf > /dev/null || SYSCALLS=0
NO_MITM=${NO_MITM:-}
NO_HAPROXY=${NO_HAPROXY:-}
NGINX_H2=${NGINX_H2:-1} # 0: the nginx proxy offers HTTP/1.1 only (wrk never asks for h2)

if [ -z "${AIRLOCK_IN_NETNS:-}" ]; then
    [ -x "$AIRLOCK" ] || { echo "no airlock binary at $AIRLOCK (build it: see README.md)" >&2; exit 2; }
    for tool in wrk nginx dnsmasq curl taskset dig python3; do
        command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed" >&2; exit 77; }
    done
fi
. "$ROOT/tests/integration/lib.sh"
t_enter_netns "$@"

if ! command -v mitmdump >/dev/null; then
    echo "mitmdump not installed: its figures are skipped"; NO_MITM=1
fi
if ! command -v haproxy >/dev/null; then
    echo "haproxy not installed: its figures are skipped"; NO_HAPROXY=1
fi
RES="$T_DIR/results"
: > "$RES"
MITM_HTTP_PID=
MITM_HTTPS_PID=
COPROC_PID=
PERF_PID=

b_cleanup() {
    [ -n "$PERF_PID" ] && kill -INT "$PERF_PID" 2>/dev/null
    [ -n "$COPROC_PID" ] && kill "$COPROC_PID" 2>/dev/null
    local f
    for f in "$T_DIR/up.pid" "$T_DIR/px.pid"; do
        [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null
    done
    [ -n "$MITM_HTTP_PID" ] && kill "$MITM_HTTP_PID" 2>/dev/null
    [ -n "$MITM_HTTPS_PID" ] && kill "$MITM_HTTPS_PID" 2>/dev/null
    [ -f "$T_DIR/ha.pid" ] && kill "$(cat "$T_DIR/ha.pid")" 2>/dev/null
    t_cleanup
}
trap b_cleanup EXIT
trap 'exit 130' INT TERM

# Everything this shell starts runs on LOAD_CPU unless started with taskset -c PROXY_CPU.
taskset -p -c "$LOAD_CPU" $$ > /dev/null
# NICE=-10 (say) raises every benchmark process above other work on a shared box; the
# "waiting for a CPU" figures show how much other work still interfered.
[ "${NICE:-0}" != 0 ] && renice -n "$NICE" -p $$ > /dev/null
ulimit -n "$(ulimit -Hn)" 2>/dev/null # 1000 idle connections need ~2000 fds
sysctl -qw net.ipv4.tcp_tw_reuse=1 net.ipv4.ip_local_port_range="1024 65000" \
    net.core.somaxconn=4096 2>/dev/null
ip addr add 127.0.0.5/8 dev lo 2>/dev/null || true
ip addr add 127.0.0.6/8 dev lo 2>/dev/null || true
ip addr add 127.0.0.7/8 dev lo 2>/dev/null || true
printf '127.0.0.1 localhost\n127.0.0.2 upstream.test\n127.0.0.5 bench-nginx.test\n127.0.0.6 bench-mitm.test\n127.0.0.7 bench-haproxy.test\n' \
    > "$T_DIR/hosts"
mount --bind "$T_DIR/hosts" /etc/hosts

log() { echo "[$(date +%T)] $*"; }
record() { echo "$1 $2 $3" >> "$RES"; } # record METRIC SUBJECT VALUE
forget_pid() { # drops a stopped pid from lib.sh's list so the cleanup never signals it again
    local p keep=()
    for p in "${T_PIDS[@]}"; do [ "$p" != "$1" ] && keep+=("$p"); done
    T_PIDS=("${keep[@]}")
}

# ---------------------------------------------------------------- fixtures
mkdir -p "$T_DIR/www" "$T_DIR/mitm"
head -c 1024 /dev/urandom > "$T_DIR/www/1k.bin"
truncate -s "${BIG_MB}M" "$T_DIR/www/big.bin"
# read it once so the page cache holds it: the first proxy measured would otherwise pay for
# the upstream filling the cache (a cold 512 MiB read made airlock's first download 4x slower)
cat "$T_DIR/www/big.bin" > /dev/null
BIG_BYTES=$((BIG_MB * 1024 * 1024))
cat > "$T_DIR/allow.yaml" <<'YAML'
domains: ["bench.test", "*.bench.test"]
YAML
t_upstream_ca
t_upstream_cert "DNS:upstream.test,DNS:bench.test,DNS:*.bench.test" "$T_DIR/up"
t_upstream_cert "DNS:bench-nginx.test" "$T_DIR/front"
t_upstream_cert "DNS:bench-haproxy.test" "$T_DIR/fronth"
cat "$T_DIR/fronth.pem" "$T_DIR/fronth.key" > "$T_DIR/fronth.crt" # HAProxy: one file
chmod -R a+rX "$T_DIR"

nginx_common() { # $1 = name
    local nw=1
    [ "$1" = px ] && nw=$WORKERS # the proxy under test (the upstream keeps one)
    cat <<NGINX
worker_processes $nw;
worker_rlimit_nofile 65536;
pid $T_DIR/$1.pid;
error_log $T_DIR/$1-error.log;
events { worker_connections 16384; }
NGINX
}
nginx_http_common() {
    cat <<NGINX
    access_log off;
    client_body_temp_path $T_DIR/$1-tmp/body;
    proxy_temp_path $T_DIR/$1-tmp/proxy;
    fastcgi_temp_path $T_DIR/$1-tmp/fastcgi;
    uwsgi_temp_path $T_DIR/$1-tmp/uwsgi;
    scgi_temp_path $T_DIR/$1-tmp/scgi;
    keepalive_requests 100000000;
    keepalive_timeout 600s;
    default_type application/octet-stream;
    ssl_protocols TLSv1.2 TLSv1.3; # nginx 1.22 defaults to TLS <= 1.2; airlock and mitmdump do 1.3
NGINX
}

# The upstream: nginx on 127.0.0.2:80 and :443 (P-256 certificate from the test CA), one
# worker, no log, sendfile; on LOAD_CPU.
start_upstream() {
    mkdir -p "$T_DIR/up-tmp"
    { nginx_common up; echo "http {"; nginx_http_common up; cat <<NGINX
    sendfile on;
    server {
        listen 127.0.0.2:80 backlog=4096;
        root $T_DIR/www;
    }
    server {
        listen 127.0.0.2:443 ssl backlog=4096;
        ssl_certificate $T_DIR/up.pem;
        ssl_certificate_key $T_DIR/up.key;
        root $T_DIR/www;
    }
}
NGINX
    } > "$T_DIR/up.conf"
    nginx -c "$T_DIR/up.conf" -g 'daemon on;' || return 1
    t_wait_port 127.0.0.2 80 && t_wait_port 127.0.0.2 443
}

# Baseline (b): nginx as a plain reverse proxy on 127.0.0.5: HTTP/1.1 to the upstream with a
# keep-alive pool; on 443 it terminates TLS with its own P-256 certificate and proxies to the
# HTTPS upstream, verifying it against the test CA (TLS in, TLS out, like airlock). Bodies
# stream through its memory buffers (proxy_max_temp_file_size 0: no temp file); on PROXY_CPU.
start_nginx_proxy() {
    mkdir -p "$T_DIR/px-tmp"
    { nginx_common px; echo "http {"; nginx_http_common px; cat <<NGINX
    upstream up_http { server 127.0.0.2:80; keepalive 64; }
    upstream up_https { server 127.0.0.2:443; keepalive 64; }
    proxy_http_version 1.1;
    proxy_set_header Connection "";
    proxy_max_temp_file_size 0;
    server {
        listen 127.0.0.5:80 backlog=4096;
        location / { proxy_pass http://up_http; }
    }
    server {
        listen 127.0.0.5:443 ssl$([ "$NGINX_H2" != 0 ] && echo ' http2') backlog=4096;
        ssl_certificate $T_DIR/front.pem;
        ssl_certificate_key $T_DIR/front.key;
        location / {
            proxy_pass https://up_https;
            proxy_ssl_verify on;
            proxy_ssl_protocols TLSv1.2 TLSv1.3; # 1.22's default stops at 1.2; airlock and HAProxy do 1.3
            proxy_ssl_trusted_certificate $T_DIR/upca.pem;
            proxy_ssl_name upstream.test;
            proxy_ssl_server_name on;
        }
    }
}
NGINX
    } > "$T_DIR/px.conf"
    taskset -c "$PROXY_CPU" nginx -c "$T_DIR/px.conf" -g 'daemon on;' || return 1
    t_wait_port 127.0.0.5 80 && t_wait_port 127.0.0.5 443
}
stop_nginx_proxy() {
    local pid i
    pid=$(cat "$T_DIR/px.pid" 2>/dev/null) || return 0
    kill "$pid" 2>/dev/null
    for i in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    rm -f "$T_DIR/px.pid"
}
nginx_proxy_pids() {
    local m
    m=$(cat "$T_DIR/px.pid" 2>/dev/null) || return 0
    echo "$m" $(pgrep -P "$m")
}

# Baseline (d): HAProxy 2.6 as a reverse proxy on 127.0.0.7, configured as for production
# (haproxy.org's and Mozilla's advice): one thread (nbthread 1, like one nginx worker), keep-alive
# on both sides with idle server connections shared between clients (http-reuse always), on 443
# TLS 1.2/1.3 with its own P-256 certificate, ALPN h2,http/1.1 toward the client and the
# upstream, the upstream verified against the test CA with SNI upstream.test; no logging; on
# PROXY_CPU.
HAPROXY_CONF_EXTRA=${HAPROXY_CONF_EXTRA:-}
start_haproxy() {
    [ -n "$NO_HAPROXY" ] && return 0
    cat > "$T_DIR/ha.cfg" <<HAP
global
    nbthread $WORKERS
    maxconn 9000
    pidfile $T_DIR/ha.pid
    tune.bufsize 16384
    ssl-default-bind-options ssl-min-ver TLSv1.2
    ssl-default-server-options ssl-min-ver TLSv1.2
    $HAPROXY_CONF_EXTRA
defaults
    mode http
    option http-keep-alive
    http-reuse always
    timeout connect 5s
    timeout client 600s
    timeout server 600s
    timeout http-keep-alive 600s
    maxconn 9000
frontend fe_http
    bind 127.0.0.7:80 backlog 4096
    default_backend be_http
frontend fe_https
    bind 127.0.0.7:443 backlog 4096 ssl crt $T_DIR/fronth.crt alpn h2,http/1.1
    default_backend be_https
backend be_http
    server up 127.0.0.2:80
backend be_https
    server up 127.0.0.2:443 ssl verify required ca-file $T_DIR/upca.pem sni str(upstream.test) verifyhost upstream.test alpn h2,http/1.1
HAP
    taskset -c "$PROXY_CPU" haproxy -D -f "$T_DIR/ha.cfg" > "$T_DIR/ha.log" 2>&1 ||
        { cat "$T_DIR/ha.log"; return 1; }
    t_wait_port 127.0.0.7 80 && t_wait_port 127.0.0.7 443
}
stop_haproxy() {
    local pid i
    pid=$(cat "$T_DIR/ha.pid" 2>/dev/null) || return 0
    kill $pid 2>/dev/null
    for i in $(seq 1 100); do kill -0 $pid 2>/dev/null || break; sleep 0.05; done
    rm -f "$T_DIR/ha.pid"
}

# (a) airlock, pinned from its first instruction (exec keeps the pid lib.sh records).
printf '#!/bin/sh\nexec taskset -c %s "%s" "$@"\n' "$PROXY_CPU" "$AIRLOCK" > "$T_DIR/airlock-pinned"
chmod +x "$T_DIR/airlock-pinned"
start_airlock() {
    AIRLOCK="$T_DIR/airlock-pinned" t_start_airlock "$T_DIR/allow.yaml" \
        --upstream-ca "$T_DIR/upca.pem" ${WORKERS_ARG[@]+"${WORKERS_ARG[@]}"}
}
stop_airlock() {
    t_stop_airlock
    forget_pid "$AIRLOCK_PID"
}

# (c) mitmdump 8.1.1 in reverse mode (one mode per process in 8.x), quiet, flow_detail 0,
# streaming bodies above 1 MB (else it buffers the whole 1 GiB); the HTTPS one uses airlock's
# P-256 CA (mitmproxy file format) and verifies the upstream against the test CA.
MITM_OPTS=(-q --set flow_detail=0 --set termlog_verbosity=error --set stream_large_bodies=1m
    --set confdir="$T_DIR/mitm")
start_mitm_http() {
    [ -n "$NO_MITM" ] && return 0
    taskset -c "$PROXY_CPU" mitmdump "${MITM_OPTS[@]}" --listen-host 127.0.0.6 -p 80 \
        --mode reverse:http://upstream.test:80 > "$T_DIR/mitm-http.log" 2>&1 &
    MITM_HTTP_PID=$!
    t_wait_port 127.0.0.6 80 30
}
start_mitm_https() {
    [ -n "$NO_MITM" ] && return 0
    cp "$T_DIR/confdir/mitmproxy-ca.pem" "$T_DIR/mitm/mitmproxy-ca.pem"
    taskset -c "$PROXY_CPU" mitmdump "${MITM_OPTS[@]}" --listen-host 127.0.0.6 -p 443 \
        --mode reverse:https://upstream.test:443 \
        --set ssl_verify_upstream_trusted_ca="$T_DIR/upca.pem" > "$T_DIR/mitm-https.log" 2>&1 &
    MITM_HTTPS_PID=$!
    t_wait_port 127.0.0.6 443 30
}
stop_mitm_https() {
    [ -n "$MITM_HTTPS_PID" ] || return 0
    kill "$MITM_HTTPS_PID" 2>/dev/null
    wait "$MITM_HTTPS_PID" 2>/dev/null
    MITM_HTTPS_PID=
}

upstream_pids() { local m; m=$(cat "$T_DIR/up.pid" 2>/dev/null) && echo $(pgrep -P "$m"); }
proxy_pids() { # proxy_pids airlock|nginx|mitmdump
    case $1 in
        airlock) echo "$AIRLOCK_PID" ;;
        nginx) nginx_proxy_pids ;;
        mitmdump) echo $MITM_HTTP_PID $MITM_HTTPS_PID ;;
        haproxy) cat "$T_DIR/ha.pid" 2>/dev/null ;;
    esac
}
sched_ns() { # "run_ns wait_ns" summed over all threads of the given processes (schedstat:
    # time on a CPU, and time runnable but waiting for one, i.e. contention from other work)
    local p
    for p in "$@"; do cat /proc/"$p"/task/*/schedstat 2>/dev/null; done |
        awk '{ r += $1; w += $2 } END { printf "%.0f %.0f\n", r, w }'
}
rss_kb() { # summed VmRSS
    local p t=0 v
    for p in "$@"; do
        v=$(t_rss_kb "$p" 2>/dev/null)
        t=$((t + ${v:-0}))
    done
    echo "$t"
}
fds() {
    local p t=0
    for p in "$@"; do t=$((t + $(t_fds "$p"))); done
    echo "$t"
}
now_ns() { date +%s%N; }
load_cpu_ticks() { # LOAD_CPU's /proc/stat ticks "user nice system idle iowait irq softirq", pinned runs only
    case $LOAD_CPU in *[!0-9]*) return 0 ;; esac
    awk -v c="cpu$LOAD_CPU" '$1 == c { print $2, $3, $4, $5, $6, $7, $8 }' /proc/stat
}
io_bytes() { # "rchar wchar" summed over the processes (bytes through read/write-like calls)
    local p
    for p in "$@"; do cat /proc/"$p"/io 2>/dev/null; done |
        awk '/^rchar/ { r += $2 } /^wchar/ { w += $2 } END { printf "%.0f %.0f\n", r, w }'
}
# ipis CPU: rescheduling + function-call interrupts that CPU has taken (/proc/interrupts): on
# this virtual machine each is an exit to the host, the cost of waking a task on another core.
ipis() {
    awk -v c="$1" '$1 == "RES:" || $1 == "CAL:" { n += $(c + 2) } END { printf "%.0f\n", n }' /proc/interrupts
}
tcp_counts() { # this namespace's TCP counters: "OutSegs PureAcksIn DelayedACKs AutoCorking"
    awk '$1 == "Tcp:" && $2 ~ /^[0-9]/ { for (i = 2; i <= NF; i++) if (h[i] == "OutSegs") o = $i }
        $1 == "Tcp:" { for (i = 2; i <= NF; i++) h[i] = $i }
        $1 == "TcpExt:" && $2 ~ /^[0-9]/ { for (i = 2; i <= NF; i++) x[e[i]] = $i }
        $1 == "TcpExt:" { for (i = 2; i <= NF; i++) e[i] = $i }
        END { printf "%s %s %s %s\n", o, x["TCPPureAcks"], x["DelayedACKs"], x["TCPAutoCorking"] }' \
        /proc/net/snmp /proc/net/netstat
}
# tcp_per BEFORE AFTER N FORMAT: tcp_counts' change per unit (request, MiB) as one phrase
tcp_per() {
    awk -v a="$1" -v b="$2" -v n="$3" -v f="$4" 'BEGIN { split(a, x, " "); split(b, y, " ")
        printf f " segments, " f " pure ACKs received, %.2f delayed ACKs, " f " auto-corked",
            (y[1] - x[1]) / n, (y[2] - x[2]) / n, (y[3] - x[3]) / n, (y[4] - x[4]) / n }'
}
load_idle_pct() { # load_idle_pct TICKS_BEFORE TICKS_AFTER: the load CPU's idle share, or "-"
    [ -n "$1" ] && [ -n "$2" ] || { echo -; return; }
    awk -v t0="$1" -v t1="$2" 'BEGIN { split(t0, a, " "); split(t1, z, " "); b = 0
        for (i = 1; i <= 7; i++) if (i != 4 && i != 5) b += z[i] - a[i]
        i = (z[4] - a[4]) + (z[5] - a[5]); printf "%.0f", 100 * i / (b + i + 1e-9) }'
}
# perf_counts PERF_STAT_FILE PER LABEL FORMAT [TOP]: a `perf stat -x,` file's system calls by
# name (and, when counted, "all" of them and context switches) divided by PER, most first, on
# one line after LABEL (TOP: the first TOP only)
perf_counts() {
    awk -F, -v n="$2" -v f="$4" '$3 == "raw_syscalls:sys_enter" { printf f " all\n", $1 / n }
        $3 == "context-switches" { printf "%.3f context-switches\n", $1 / n }
        $3 ~ /^syscalls:sys_enter_/ && $1 + 0 > 0 {
            sub("syscalls:sys_enter_", "", $3); printf f " %s\n", $1 / n, $3 }' "$1" |
        sort -rn | head -n "${5:-1000}" | awk '{ printf "%s %s  ", $2, $1 } END { print "" }' |
        sed "s/^/    $3: /"
}
# PROFILE_LOAD=1 (pinned runs): perf record of the whole load CPU, started and stopped around a
# measurement, then its samples by process and symbol (PROFILE_LOAD_G=1: with call graphs).
LOADPROF=
load_profile_start() { # load_profile_start DATAFILE
    LOADPROF=
    [ "${PROFILE_LOAD:-0}" = 1 ] && [ -n "$(load_cpu_ticks)" ] && command -v perf > /dev/null ||
        return 0
    perf record -q -F 1999 ${PROFILE_LOAD_G:+--call-graph dwarf,8192} -C "$LOAD_CPU" -o "$1" \
        > /dev/null 2>&1 &
    LOADPROF=$!
}
load_profile_stop() { # load_profile_stop DATAFILE TITLE
    [ -n "$LOADPROF" ] || return 0
    kill -INT "$LOADPROF" 2>/dev/null; wait "$LOADPROF" 2>/dev/null
    LOADPROF=
    echo "  --- load CPU $LOAD_CPU during $2: samples by process and symbol (>= 0.7 %)"
    perf report -i "$1" --sort comm,dso,symbol --stdio --percent-limit 0.7 2>/dev/null |
        grep -v '^#' | grep -v '^$' | head -45 | cut -c1-110
    if [ -n "${OUT:-}" ]; then mkdir -p "$OUT" && cp "$1" "$OUT/"; fi
}

# Front ends: subject -> URL base per protocol.
base_url() { # base_url http|https subject
    case $2 in
        airlock) echo "$1://bench.test" ;;
        nginx) echo "$1://bench-nginx.test" ;;
        mitmdump) echo "$1://bench-mitm.test" ;;
        haproxy) echo "$1://bench-haproxy.test" ;;
    esac
}
subjects() {
    echo airlock nginx
    [ -z "$NO_HAPROXY" ] && echo haproxy
    [ -z "$NO_MITM" ] && echo mitmdump
}
CURL_TLS=(--cacert "$T_DIR/clients-ca.pem") # airlock's CA (airlock, mitmdump) + the test CA (nginx)

# Correctness gate: a 200 with the 1 KiB body through each front end before any timing;
# for TLS also prints what the front end negotiates with an OpenSSL 3 client.
check_front() { # check_front http|https subject
    local base url out host
    base=$(base_url "$1" "$2"); url="$base/1k.bin"; host=${base#*://}
    out=$(curl -s -m 10 -o "$T_DIR/probe" -w '%{http_code}' "${CURL_TLS[@]}" "$url")
    if [ "$out" != 200 ] || ! cmp -s "$T_DIR/probe" "$T_DIR/www/1k.bin"; then
        echo "  $2: $url answered [$out], not the 1 KiB file: its figures are skipped" >&2
        return 1
    fi
    if [ "$1" = https ]; then
        echo "  $2 $1: $(echo | timeout 10 openssl s_client -brief -connect "$host:443" -servername "$host" 2>&1 |
            awk -F': ' '/^Protocol version|^Ciphersuite|^Server Temp Key/ {printf "%s  ", $2}')"
    else
        echo "  $2 $1: ok"
    fi
}

# wrk run against one front end; records req/s, proxy CPU us per request and core use.
bench_wrk() { # bench_wrk METRIC SUBJECT URL [wrk args...]
    local metric=$1 subj=$2 url=$3; shift 3
    local pids r0 w0 r1 w1 t0 t1 out rps reqs errs
    pids=$(proxy_pids "$subj")
    wrk -t1 -c"$CONNS" -d"${WARMUP}s" "$@" "$url" > /dev/null 2>&1
    local ups ur0 uw0 ur1 uw1
    ups=$(upstream_pids)
    read -r ur0 uw0 < <(sched_ns $ups)
    # system calls the proxy makes over the measured window (perf's raw_syscalls tracepoint,
    # every thread of every proxy process); SYSCALLS=0 skips it
    local sysout="$T_DIR/sys-$metric-$subj" perfpid=
    rm -f "$sysout"
    if [ "$SYSCALLS" = 1 ]; then
        local ev=raw_syscalls:sys_enter
        [ "${SYSCALL_DETAIL:-0}" = 1 ] && ev='raw_syscalls:sys_enter,syscalls:sys_enter_*'
        perf stat -x, -e "$ev" -p "$(echo $pids | tr ' ' ',')" \
            -o "$sysout" -- sleep $((DURATION + 1)) > /dev/null 2>&1 &
        perfpid=$!
        sleep 0.5
    fi
    local lt0 lt1 uio0 uio1 tc0 tc1
    local ipi0= ipi1= lipi0= lipi1=
    case $PROXY_CPU$LOAD_CPU in *[!0-9]*) ;; *) ipi0=$(ipis "$PROXY_CPU"); lipi0=$(ipis "$LOAD_CPU") ;; esac
    lt0=$(load_cpu_ticks); uio0=$(io_bytes $ups); tc0=$(tcp_counts)
    read -r r0 w0 < <(sched_ns $pids); t0=$(now_ns)
    # wrk's own CPU (perf stat's task-clock, ms), when perf is there
    local wrkcpu="$T_DIR/wrkcpu-$metric-$subj" wrkrun=()
    rm -f "$wrkcpu"
    local lev=task-clock upsys="$T_DIR/upsys-$metric-$subj" uppid= sspid=
    # LOAD_DETAIL=1: the context switches and system calls of wrk and the upstream nginx, per
    # request; LOAD_DETAIL=2 also the calls by name (every syscall tracepoint on: slower)
    if [ "${LOAD_DETAIL:-0}" != 0 ]; then
        lev='context-switches,raw_syscalls:sys_enter'
        [ "$LOAD_DETAIL" = 2 ] && lev="$lev,syscalls:sys_enter_*"
        rm -f "$upsys"
        perf stat -x, -e "$lev" -p "$(echo $ups | tr ' ' ',')" \
            -o "$upsys" -- sleep "$DURATION" > /dev/null 2>&1 &
        uppid=$!
        lev="task-clock,$lev"
        # the proxy's connections to the upstream, halfway through
        (sleep "$(awk -v d="$DURATION" 'BEGIN { print d / 2 }')"
            ss -Htnp state established '( dport = :443 or dport = :80 )' dst 127.0.0.2 |
                grep -cE "pid=($(echo $pids | tr ' ' '|'))," > "$T_DIR/upconns-$metric-$subj") &
        sspid=$!
    fi
    command -v perf > /dev/null && wrkrun=(perf stat -x, -e "$lev" -o "$wrkcpu" --)
    load_profile_start "$T_DIR/perf-load-$metric-$subj.data"
    out=$("${wrkrun[@]}" wrk -t1 -c"$CONNS" -d"${DURATION}s" "$@" "$url" 2>&1)
    t1=$(now_ns); read -r r1 w1 < <(sched_ns $pids)
    lt1=$(load_cpu_ticks); uio1=$(io_bytes $ups); tc1=$(tcp_counts)
    [ -n "$ipi0" ] && { ipi1=$(ipis "$PROXY_CPU"); lipi1=$(ipis "$LOAD_CPU"); }
    load_profile_stop "$T_DIR/perf-load-$metric-$subj.data" "$metric through $subj"
    [ -n "$perfpid" ] && wait "$perfpid"
    [ -n "$uppid" ] && wait "$uppid"
    read -r ur1 uw1 < <(sched_ns $ups)
    rps=$(echo "$out" | awk '/^Requests\/sec:/ {print $2}')
    reqs=$(echo "$out" | awk '/requests in/ {print $1}')
    errs=$(echo "$out" | grep -E 'Socket errors|Non-2xx' | tr -s ' ' | tr '\n' ';')
    if [ -z "$rps" ] || [ "${reqs:-0}" -eq 0 ]; then
        echo "  $metric $subj: wrk failed: $(echo "$out" | tail -3 | tr '\n' ' ')"
        return 1
    fi
    local cpu_us util wait upwait wrk_us= up_us
    cpu_us=$(awk -v c=$((r1 - r0)) -v n="$reqs" 'BEGIN {printf "%.2f", c / 1e3 / n}')
    # the load side's CPU per request (in pinned runs both share the load CPU): wrk's, and the
    # upstream nginx's over the window (its counters span the perf window too, ~1 s more)
    [ -s "$wrkcpu" ] && wrk_us=$(awk -F, -v n="$reqs" '$3 ~ /task-clock/ {printf "%.2f", $1 * 1e3 / n; exit}' "$wrkcpu")
    up_us=$(awk -v c=$((ur1 - ur0)) -v n="$reqs" 'BEGIN {printf "%.2f", c / 1e3 / n}')
    [ -n "$wrk_us" ] && record "$metric.wrk_us" "$subj" "$wrk_us"
    record "$metric.up_us" "$subj" "$up_us"
    util=$(awk -v c=$((r1 - r0)) -v ns=$((t1 - t0)) 'BEGIN {printf "%.0f", c / ns * 100}')
    wait=$(awk -v c=$((w1 - w0)) -v ns=$((t1 - t0)) 'BEGIN {printf "%.0f", c / ns * 100}')
    upwait=$(awk -v c=$((uw1 - uw0)) -v ns=$((t1 - t0)) 'BEGIN {printf "%.0f", c / ns * 100}')
    record "$metric.upwait" "$subj" "$upwait"
    record "$metric.rps" "$subj" "$rps"
    record "$metric.cpu_us" "$subj" "$cpu_us"
    record "$metric.util" "$subj" "$util"
    record "$metric.wait" "$subj" "$wait"
    local sys=-
    if [ -s "$sysout" ]; then
        # the perf window opens 0.5 s before wrk's and closes ~0.5 s after it: the proxy is
        # idle then (a timer a second at most), so the count is the window's
        sys=$(awk -F, -v n="$reqs" '/raw_syscalls:sys_enter/ {printf "%.2f", $1 / n}' "$sysout")
        [ -n "$sys" ] && record "$metric.sys" "$subj" "$sys"
        # SYSCALL_DETAIL=1: which calls, per request
        [ "${SYSCALL_DETAIL:-0}" = 1 ] && perf_counts "$sysout" "$reqs" "$metric $subj per request" %.2f 9
    fi
    local lidle
    lidle=$(load_idle_pct "$lt0" "$lt1")
    [ "$lidle" != - ] && record "$metric.load_idle" "$subj" "$lidle"
    printf '  %-12s %-9s %9s req/s %7s us CPU/req %5s syscalls/req; proxy on-CPU %3s%%, waiting %3s%%; upstream waiting %3s%%; load us/req: wrk %s, upstream %s; load CPU idle %s%% %s\n' \
        "$metric" "$subj" "$rps" "$cpu_us" "${sys:--}" "$util" "$wait" "$upwait" "${wrk_us:--}" "$up_us" "$lidle" "${errs}"
    if [ "${LOAD_DETAIL:-0}" != 0 ]; then # the upstream's window is DURATION long, wrk's too
        wait "$sspid"
        echo "    $metric $subj: $(cat "$T_DIR/upconns-$metric-$subj" 2>/dev/null) connections to the upstream halfway through;" \
            "the upstream read/wrote $(awk -v a="$uio0" -v b="$uio1" -v n="$reqs" 'BEGIN { split(a, x, " "); split(b, y, " ")
                printf "%.0f / %.0f", (y[1] - x[1]) / n, (y[2] - x[2]) / n }') bytes per request"
        # every TCP segment in the namespace (both legs, both directions; a few of the
        # measuring's own), the pure ACKs received among them, delayed ACKs and auto-corked sends
        echo "    $metric $subj: TCP per request: $(tcp_per "$tc0" "$tc1" "$reqs" %.2f)"
        # wake-up interrupts each CPU took per request (pinned runs)
        [ -n "$ipi1" ] && echo "    $metric $subj: IPIs per request: proxy CPU $(awk -v a="$ipi0" \
            -v b="$ipi1" -v n="$reqs" 'BEGIN { printf "%.3f", (b - a) / n }'), load CPU $(awk \
            -v a="$lipi0" -v b="$lipi1" -v n="$reqs" 'BEGIN { printf "%.3f", (b - a) / n }')"
        [ -s "$wrkcpu" ] && perf_counts "$wrkcpu" "$reqs" "$metric $subj wrk per request" %.2f 9
        [ -s "$upsys" ] && perf_counts "$upsys" "$reqs" "$metric $subj upstream per request" %.2f 9
    fi
}

# One download of the big file with curl over PROTO (http1.1 or http2: the protocol is forced
# so that every proxy is measured on the same one, and the one used is printed); records MB/s
# (10^6 bytes) and proxy core use.
bench_big() { # bench_big METRIC SUBJECT URL MAXTIME PROTO
    local metric=$1 subj=$2 url=$3 maxt=$4 proto=${5:-http1.1}
    local pids r0 w0 r1 w1 out code size secs hv
    pids=$(proxy_pids "$subj")
    local ups ur0 uw0 ur1 uw1 upwait
    ups=$(upstream_pids)
    read -r ur0 uw0 < <(sched_ns $ups)
    read -r r0 w0 < <(sched_ns $pids)
    out=$(curl -s "--$proto" -o /dev/null --max-time "$maxt" "${CURL_TLS[@]}" \
        -w '%{http_code} %{size_download} %{time_total} %{http_version}' "$url")
    read -r r1 w1 < <(sched_ns $pids)
    read -r ur1 uw1 < <(sched_ns $ups)
    read -r code size secs hv <<< "$out"
    if [ "${size:-0}" -eq 0 ]; then
        echo "  $metric $subj: download failed [$out]"; return 1
    fi
    local mbps util wait cpu_gib note=""
    mbps=$(awk -v b="$size" -v s="$secs" 'BEGIN {printf "%.1f", b / s / 1e6}')
    util=$(awk -v c=$((r1 - r0)) -v s="$secs" 'BEGIN {printf "%.0f", c / 1e9 / s * 100}')
    wait=$(awk -v c=$((w1 - w0)) -v s="$secs" 'BEGIN {printf "%.0f", c / 1e9 / s * 100}')
    upwait=$(awk -v c=$((uw1 - uw0)) -v s="$secs" 'BEGIN {printf "%.0f", c / 1e9 / s * 100}')
    record "$metric.upwait" "$subj" "$upwait"
    cpu_gib=$(awk -v c=$((r1 - r0)) -v b="$size" 'BEGIN {printf "%.0f", c / 1e6 / (b / 1073741824)}')
    [ "$size" -lt "$BIG_BYTES" ] && note="(partial: $size of $BIG_BYTES bytes in the ${maxt}s cap)"
    record "$metric.mbps" "$subj" "$mbps"
    record "$metric.util" "$subj" "$util"
    record "$metric.wait" "$subj" "$wait"
    record "$metric.cpu_ms_gib" "$subj" "$cpu_gib"
    printf '  %-12s %-9s %9s MB/s %6.2f s, HTTP/%s status %s; proxy CPU %5s ms/GiB, on-CPU %3s%%, waiting %3s%%; upstream waiting %3s%% %s\n' \
        "$metric" "$subj" "$mbps" "$secs" "$hv" "$code" "$cpu_gib" "$util" "$wait" "$upwait" "$note"
    sleep 1 # let a capped proxy drain
}

# First-request latency to never-seen names (airlock mints a leaf) vs the same names again.
bench_mint() { # bench_mint RUN
    local i name out a1 t1 a2 t2
    : > "$T_DIR/mint.$1"
    for i in $(seq 1 "$FRESH"); do
        name="fresh-$1-$i-$RANDOM.bench.test"
        out=$(curl -s -o /dev/null -m 10 "${CURL_TLS[@]}" -w '%{http_code} %{time_appconnect} %{time_total}' "https://$name/1k.bin")
        echo "$name first $out" >> "$T_DIR/mint.$1"
    done
    for i in $(seq 1 "$FRESH"); do
        name=$(awk -v n="$i" 'NR == n {print $1}' "$T_DIR/mint.$1")
        out=$(curl -s -o /dev/null -m 10 "${CURL_TLS[@]}" -w '%{http_code} %{time_appconnect} %{time_total}' "https://$name/1k.bin")
        echo "$name second $out" >> "$T_DIR/mint.$1"
    done
    "$PY" - "$T_DIR/mint.$1" "$RES" <<'PYX'
import statistics, sys
first, second = {}, {}
for line in open(sys.argv[1]):
    name, which, code, app, total = line.split()
    if code != "200":
        print("  mint: %s %s answered %s" % (name, which, code))
        continue
    (first if which == "first" else second)[name] = (float(app) * 1e3, float(total) * 1e3)
names = [n for n in first if n in second]
if not names:
    print("  mint: no complete pairs"); sys.exit(0)
m = lambda xs: statistics.median(xs)
r = {
    "app_first_ms": m([first[n][0] for n in names]),
    "app_second_ms": m([second[n][0] for n in names]),
    "app_diff_ms": m([first[n][0] - second[n][0] for n in names]),
    "total_first_ms": m([first[n][1] for n in names]),
    "total_second_ms": m([second[n][1] for n in names]),
    "total_diff_ms": m([first[n][1] - second[n][1] for n in names]),
}
with open(sys.argv[2], "a") as f:
    for k, v in r.items():
        f.write("https.mint.%s airlock %.3f\n" % (k, v))
print("  mint         airlock   %d names: handshake done %.2f ms first, %.2f ms again (median diff %+.3f ms); "
      "total %.2f / %.2f ms (median diff %+.3f ms)" % (len(names), r["app_first_ms"], r["app_second_ms"],
      r["app_diff_ms"], r["total_first_ms"], r["total_second_ms"], r["total_diff_ms"]))
PYX
    # the same in one Python process, timing only the handshake (no process start, DNS or
    # CA loading in the timed part), with other fresh names
    local names=()
    for i in $(seq 1 "$FRESH"); do names+=("py-$1-$i-$RANDOM.bench.test"); done
    "$PY" "$HERE/mint_latency.py" 127.0.0.1 443 "$T_DIR/clients-ca.pem" "${names[@]}" \
        > "$T_DIR/mintpy.$1" 2>&1
    "$PY" - "$T_DIR/mintpy.$1" "$RES" <<'PYX'
import statistics, sys
first, second = {}, {}
for line in open(sys.argv[1]):
    p = line.split()
    if len(p) != 5 or p[4] != "200":
        print("  mint (python): " + line.strip())
        continue
    (first if p[0] == "first" else second)[p[1]] = (float(p[2]), float(p[3]))
names = [n for n in first if n in second]
if not names:
    print("  mint (python): no complete pairs"); sys.exit(0)
m = statistics.median
r = {
    "hs_first_ms": m([first[n][0] for n in names]),
    "hs_second_ms": m([second[n][0] for n in names]),
    "hs_diff_ms": m([first[n][0] - second[n][0] for n in names]),
    "req_first_ms": m([first[n][1] for n in names]),
    "req_second_ms": m([second[n][1] for n in names]),
    "req_diff_ms": m([first[n][1] - second[n][1] for n in names]),
}
with open(sys.argv[2], "a") as f:
    for k, v in r.items():
        f.write("https.mint.%s airlock %.3f\n" % (k, v))
print("  mint (py)    airlock   %d names: handshake %.3f ms first, %.3f ms again (median diff %+.3f ms); "
      "request after it %.2f / %.2f ms (median diff %+.3f ms)" % (len(names), r["hs_first_ms"],
      r["hs_second_ms"], r["hs_diff_ms"], r["req_first_ms"], r["req_second_ms"], r["req_diff_ms"]))
PYX
}

# RSS of a proxy holding IDLE_CONNS idle TLS connections (handshake + one GET each).
bench_idle() { # bench_idle SUBJECT LABEL seq|burst HOST SNI
    local subj=$1 label=$2 mode=$3 host=$4 sni=$5
    local pids base hs idle closed nfd line
    [ "$IDLE_CONNS" -gt 0 ] || return 0 # IDLE_CONNS=0: not measured (no figure, not a 0)
    pids=$(proxy_pids "$subj")
    base=$(rss_kb $pids)
    coproc IDLE { exec "$PY" "$HERE/idle_conns.py" --host "$host" --sni "$sni" \
        --count "$IDLE_CONNS" --mode "$mode" --timeout 300 2>&1; }
    COPROC_PID=$IDLE_PID
    local in=${IDLE[0]} outfd=${IDLE[1]}
    if ! read -r -t 300 -u "$in" line || [ "${line%% *}" != handshaken ]; then
        echo "  idle $label: client failed [$line]"; kill "$COPROC_PID" 2>/dev/null
        wait "$COPROC_PID" 2>/dev/null; COPROC_PID=; return 1
    fi
    sleep 1; hs=$(rss_kb $pids)
    echo go >&"$outfd"
    if ! read -r -t 300 -u "$in" line || [ "${line%% *}" != idle ]; then
        echo "  idle $label: requests failed [$line]"; kill "$COPROC_PID" 2>/dev/null
        wait "$COPROC_PID" 2>/dev/null; COPROC_PID=; return 1
    fi
    # "idle OK [STATUS:COUNT...]": connections stay open whatever the answer (a 502 is kept
    # alive too), so the figures still hold IDLE_CONNS connections; the note says what failed
    local note="" ok rest
    read -r _ ok rest <<< "$line"
    [ "$ok" != "$IDLE_CONNS" ] && note="(only $ok of $IDLE_CONNS answered 200; others: $rest; the fds say how many stayed open)"
    # idle means idle: past airlock's quiet-time heap trim (PX_TRIM_CHECK_MS, a whole second
    # without a read, checked every second), the same wait for every proxy
    sleep 2.5; idle=$(rss_kb $pids); nfd=$(fds $pids)
    echo go >&"$outfd"
    read -r -t 60 -u "$in" line
    wait "$COPROC_PID" 2>/dev/null; COPROC_PID=
    sleep 1; closed=$(rss_kb $pids)
    local hs_kb kb cl_kb
    hs_kb=$(awk -v a="$hs" -v b="$base" -v n="$IDLE_CONNS" 'BEGIN {printf "%.2f", (a - b) / n}')
    kb=$(awk -v a="$idle" -v b="$base" -v n="$IDLE_CONNS" 'BEGIN {printf "%.2f", (a - b) / n}')
    cl_kb=$((closed - base))
    record https.idle.hs_kb "$label" "$hs_kb"
    record https.idle.kb "$label" "$kb"
    record https.idle.fds "$label" "$nfd"
    record https.idle.closed_kb "$label" "$cl_kb"
    printf '  idle         %-13s RSS %6d KB -> %6d KB handshaken (%s KB/conn) -> %6d KB idle after a GET (%s KB/conn), %d fds; %6d KB after close %s\n' \
        "$label" "$base" "$hs" "$hs_kb" "$idle" "$kb" "$nfd" "$closed" "$note"
}
warm() { # a few requests so certificates, pools and buffers exist before a baseline
    local i
    for i in 1 2 3; do curl -s -o /dev/null -m 10 "${CURL_TLS[@]}" "$1"; done
}

# perf profile of airlock during one wrk run (call graphs from DWARF: the Release build has
# no frame pointers; build with -g, see README).
profile_airlock() { # profile_airlock LABEL URL [wrk args]
    command -v perf > /dev/null || { echo "  perf not installed"; return 0; }
    local label=$1 url=$2; shift 2
    local data="$T_DIR/perf-$label.data"
    perf record -q -F 499 --call-graph dwarf,16384 -o "$data" -p "$AIRLOCK_PID" \
        -- sleep "$DURATION" > /dev/null 2>&1 &
    PERF_PID=$!
    wrk -t1 -c"$CONNS" -d"${DURATION}s" "$@" "$url" 2>&1 | grep -E 'Requests/sec|errors'
    wait "$PERF_PID"; PERF_PID=
    echo "  --- airlock $label: self time by DSO"
    perf report -i "$data" --no-children --sort dso --stdio -g none 2>/dev/null |
        grep -v '^#' | grep -v '^$' | head -10
    echo "  --- airlock $label: self time by symbol (>= 0.7 %)"
    perf report -i "$data" --no-children --sort dso,symbol --stdio -g none --percent-limit 0.7 2>/dev/null |
        grep -v '^#' | grep -v '^$' | head -40 | cut -c1-110
    echo "  --- airlock $label: inclusive time by symbol (>= 3 %, unresolved frames dropped)"
    perf report -i "$data" --children --sort symbol --stdio -g none --percent-limit 3 2>/dev/null |
        grep -v '^#' | grep -v '^$' | grep -v '\] 0x0000' | head -60 | cut -c1-110
    if [ -n "${OUT:-}" ]; then mkdir -p "$OUT" && cp "$data" "$OUT/"; fi
}

# ---------------------------------------------------------------- start everything
log "machine: $(lscpu | awk -F: '/Model name/ {gsub(/^ +/, "", $2); print $2}'), $(getconf _NPROCESSORS_ONLN) cores; $(uname -r)"
log "tools: $(wrk -v 2>&1 | head -1 | cut -d' ' -f1-2), $(nginx -v 2>&1 | cut -d' ' -f3), $([ -z "$NO_HAPROXY" ] && haproxy -v | head -1 | cut -d' ' -f1-3), $(openssl version | cut -d' ' -f1-2)${NO_MITM:+, no mitmdump}$([ -z "$NO_MITM" ] && mitmdump --version 2>/dev/null | head -1 | tr -s ' ' | sed 's/^/, /')"
log "airlock: $AIRLOCK"
# every process here inherits it (proxies, clients, upstream): see "memcpy and rep movsb" in README
[ -n "${GLIBC_TUNABLES:-}" ] && log "GLIBC_TUNABLES=$GLIBC_TUNABLES (every process)"
log "settings: wrk -t1 -c$CONNS -d${DURATION}s (after ${WARMUP}s warm-up), RUNS=$RUNS, proxy on CPU $PROXY_CPU, wrk/curl/upstream/dnsmasq on CPU $LOAD_CPU, nice ${NICE:-0}"
log "load before: $(cat /proc/loadavg)"
t_start_resolver || exit 1
start_upstream || { echo "upstream nginx failed"; cat "$T_DIR/up-error.log"; exit 1; }
start_airlock || exit 1
cat "$T_DIR/confdir/mitmproxy-ca-cert.pem" "$T_DIR/upca.pem" > "$T_DIR/clients-ca.pem"
start_nginx_proxy || { echo "nginx proxy failed"; cat "$T_DIR/px-error.log"; exit 1; }
start_haproxy || { echo "haproxy failed: its figures are skipped"; NO_HAPROXY=1; }
case $MODE in http|all) start_mitm_http || NO_MITM=1 ;; esac
case $MODE in https|all) start_mitm_https || NO_MITM=1 ;; esac

SUBJ_HTTP=() SUBJ_HTTPS=()
log "correctness gate (200 + the 1 KiB body through each front end; TLS version, cipher, group)"
for s in $(subjects); do
    case $MODE in http|all|counts) check_front http "$s" && SUBJ_HTTP+=("$s") ;; esac
    case $MODE in https|all|counts) check_front https "$s" && SUBJ_HTTPS+=("$s") ;; esac
done

# conn_count.sh (issue 34): counts instead of rates, with everything above
if [ "$MODE" = counts ]; then . "$HERE/conn_count.sh"; exit 0; fi

# ---------------------------------------------------------------- runs
for run in $(seq 1 "$RUNS"); do
    : > "$T_DIR/net.log"
    if [ "$MODE" != https ]; then
        log "run $run/$RUNS: HTTP (issue 3)"
        for s in "${SUBJ_HTTP[@]}"; do
            bench_wrk http.ka "$s" "$(base_url http "$s")/1k.bin"
        done
        if [ "$LOW_CONNS" -gt 0 ]; then
            for s in "${SUBJ_HTTP[@]}"; do
                CONNS=$LOW_CONNS bench_wrk http.ka_low "$s" "$(base_url http "$s")/1k.bin"
            done
        fi
        for s in "${SUBJ_HTTP[@]}"; do
            t=$BIG_MAX_TIME; [ "$s" = mitmdump ] && t=$MITM_MAX_TIME
            bench_big http.big "$s" "$(base_url http "$s")/big.bin" "$t"
        done
    fi
    if [ "$MODE" != http ]; then
        log "run $run/$RUNS: HTTPS (issue 4)"
        for s in "${SUBJ_HTTPS[@]}"; do
            bench_wrk https.ka "$s" "$(base_url https "$s")/1k.bin"
        done
        if [ "$LOW_CONNS" -gt 0 ]; then
            for s in "${SUBJ_HTTPS[@]}"; do
                CONNS=$LOW_CONNS bench_wrk https.ka_low "$s" "$(base_url https "$s")/1k.bin"
            done
        fi
        for s in "${SUBJ_HTTPS[@]}"; do
            bench_wrk https.new "$s" "$(base_url https "$s")/1k.bin" -H 'Connection: close'
        done
        for s in "${SUBJ_HTTPS[@]}"; do
            t=$BIG_MAX_TIME; [ "$s" = mitmdump ] && t=$MITM_MAX_TIME
            bench_big https.big "$s" "$(base_url https "$s")/big.bin" "$t" http1.1
        done
        # the same download over HTTP/2 (nginx offers h2 unless NGINX_H2=0; mitmdump is left out)
        for s in "${SUBJ_HTTPS[@]}"; do
            [ "$s" = mitmdump ] && continue
            [ "$s" = nginx ] && [ "$NGINX_H2" = 0 ] && continue
            bench_big https.big_h2 "$s" "$(base_url https "$s")/big.bin" "$BIG_MAX_TIME" http2
        done
        bench_mint "$run"
        # idle memory: each measurement on a freshly started proxy, warmed by 3 requests
        for mode in seq burst; do
            stop_airlock; start_airlock || exit 1
            warm https://bench.test/1k.bin
            bench_idle airlock "airlock-$mode" "$mode" 127.0.0.1 bench.test
        done
        for s in "${SUBJ_HTTPS[@]}"; do
            case $s in
                nginx) stop_nginx_proxy; start_nginx_proxy || exit 1
                    warm https://bench-nginx.test/1k.bin
                    bench_idle nginx nginx seq 127.0.0.5 bench-nginx.test ;;
                mitmdump) stop_mitm_https; start_mitm_https || continue
                    warm https://bench-mitm.test/1k.bin
                    bench_idle mitmdump mitmdump seq 127.0.0.6 bench-mitm.test ;;
                haproxy) stop_haproxy; start_haproxy || continue
                    warm https://bench-haproxy.test/1k.bin
                    bench_idle haproxy haproxy seq 127.0.0.7 bench-haproxy.test ;;
            esac
        done
        stop_airlock; start_airlock || exit 1
    fi
done
log "airlock log lines written in the last run: $(wc -l < "$T_DIR/net.log"); peak RSS (VmHWM) of the current airlock: $(awk '/VmHWM/ {print $2, $3}' /proc/"$AIRLOCK_PID"/status)"

if [ "$PROFILE" = 1 ]; then
    log "profile (perf record -F 499 --call-graph dwarf on airlock during one ${DURATION}s wrk -c$CONNS run)"
    if [ "$MODE" != https ]; then profile_airlock http-keepalive http://bench.test/1k.bin; fi
    if [ "$MODE" != http ]; then
        profile_airlock https-keepalive https://bench.test/1k.bin
        profile_airlock https-newconn https://bench.test/1k.bin -H 'Connection: close'
    fi
fi

echo
log "load after: $(cat /proc/loadavg)"
log "summary: $RUNS run(s); medians"
"$PY" "$HERE/http_bench_report.py" "$RES"
if [ -n "${OUT:-}" ]; then mkdir -p "$OUT" && cp "$RES" "$OUT/results.txt"; fi
exit 0
