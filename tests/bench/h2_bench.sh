#!/bin/bash
# HTTP/2 benchmark (issue 16): h2load, many streams over few connections, small answers, TLS
# on both legs, against airlock and two anchors in the same run, pinned as in http_bench.sh:
#  - airlock (127.0.0.1:443, bench.test), to the upstream over TLS;
#  - nginx terminating h2 (127.0.0.5:443) and relaying to the same upstream with proxy_pass
#    (HTTP/1.1 over TLS, keep-alive pool: nginx cannot proxy h2);
#  - HAProxy 2.6 terminating h2 (127.0.0.7:443), nbthread 1, http-reuse always, ALPN h2,http/1.1
#    on both sides (so h2 to the upstream when it offers it), the upstream verified;
#  - mitmdump 8.1.1 in reverse mode (127.0.0.6:443), h2 toward h2load and the upstream
#    (connection_strategy=lazy: with the default, eager, it answers the client's ALPN before it
#    knows the upstream's and picks no protocol, so h2load would get HTTP/1.1).
# The upstream: nginx on 127.0.0.2:443 (h2 and http/1.1, test CA), 1 worker, no log.
#
#   tests/bench/h2_bench.sh          (see tests/bench/README.md, "HTTP/2")
#
# Environment: RUNS=3 (medians are reported), CONNS=4 STREAMS=32 (h2load -c/-m), N=100000
# (requests per airlock/nginx run), MITM_N=5000 (per mitmdump run: it is ~30x slower),
# WARM_N=2000, UPSTREAM_H2=0 (the upstream speaks HTTP/1.1 only), PROXY_CPU=0 LOAD_CPU=1
# (UNPINNED=1: both on every core), IDLE_CONNS=300 (RSS per idle h2 connection),
# SYSCALLS=1 (perf stat: the proxy's system calls per request, when perf is installed),
# NO_MITM=1, NO_HAPROXY=1, OUT=dir (the raw results go to dir/results.txt), AIRLOCK=binary (default build-bench/airlock), KEEP_TEST_DIR=1.
# Prints figures and ratios; never fails on a timing.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
: "${AIRLOCK:=$ROOT/build-bench/airlock}"
export AIRLOCK_WORKERS=${AIRLOCK_WORKERS:-1} # one event loop unless asked (the default is one per CPU)
export AIRLOCK
RUNS=${RUNS:-3}
CONNS=${CONNS:-4}
STREAMS=${STREAMS:-32}
N=${N:-100000}
MITM_N=${MITM_N:-5000}
WARM_N=${WARM_N:-2000}
PROXY_CPU=${PROXY_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
# UNPINNED=1: proxies and load share every core (as in http_bench.sh)
if [ "${UNPINNED:-0}" = 1 ]; then PROXY_CPU="0-$(($(nproc) - 1))"; LOAD_CPU=$PROXY_CPU; fi
IDLE_CONNS=${IDLE_CONNS:-300}
SYSCALLS=${SYSCALLS:-1}; command -v perf > /dev/null || SYSCALLS=0
NO_MITM=${NO_MITM:-}
NO_HAPROXY=${NO_HAPROXY:-}
UP_H2=" http2"; [ "${UPSTREAM_H2:-1}" = 0 ] && UP_H2=""

if [ -z "${AIRLOCK_IN_NETNS:-}" ]; then
    [ -x "$AIRLOCK" ] || { echo "no airlock binary at $AIRLOCK (build it: see README.md)" >&2; exit 2; }
    for tool in h2load nginx dnsmasq curl taskset dig; do
        command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed" >&2; exit 77; }
    done
fi
. "$ROOT/tests/integration/lib.sh"
t_enter_netns "$@"
command -v mitmdump > /dev/null || { echo "mitmdump not installed: its figures are skipped"; NO_MITM=1; }
command -v haproxy > /dev/null || { echo "haproxy not installed: its figures are skipped"; NO_HAPROXY=1; }
RES="$T_DIR/results"
: > "$RES"
MITM_PID=

b_cleanup() {
    local f
    for f in "$T_DIR/up.pid" "$T_DIR/px.pid" "$T_DIR/ha.pid"; do
        [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null
    done
    [ -n "$MITM_PID" ] && kill "$MITM_PID" 2>/dev/null
    t_cleanup
}
trap b_cleanup EXIT
trap 'exit 130' INT TERM
taskset -p -c "$LOAD_CPU" $$ > /dev/null
ulimit -n "$(ulimit -Hn)" 2>/dev/null
ip addr add 127.0.0.5/8 dev lo 2>/dev/null || true
ip addr add 127.0.0.6/8 dev lo 2>/dev/null || true
ip addr add 127.0.0.7/8 dev lo 2>/dev/null || true
printf '127.0.0.1 localhost\n127.0.0.2 upstream.test\n127.0.0.5 bench-nginx.test\n127.0.0.6 bench-mitm.test\n127.0.0.7 bench-haproxy.test\n' \
    > "$T_DIR/hosts"
mount --bind "$T_DIR/hosts" /etc/hosts
log() { echo "[$(date +%T)] $*"; }
record() { echo "$1 $2 $3" >> "$RES"; } # record METRIC SUBJECT VALUE

mkdir -p "$T_DIR/www" "$T_DIR/mitm" "$T_DIR/up-tmp" "$T_DIR/px-tmp"
head -c 1024 /dev/urandom > "$T_DIR/www/1k.bin"
printf 'domains: ["bench.test"]\n' > "$T_DIR/allow.yaml"
t_upstream_ca
t_upstream_cert "DNS:upstream.test,DNS:bench.test" "$T_DIR/up"
t_upstream_cert "DNS:bench-nginx.test" "$T_DIR/front"
t_upstream_cert "DNS:bench-haproxy.test" "$T_DIR/fronth"
cat "$T_DIR/fronth.pem" "$T_DIR/fronth.key" > "$T_DIR/fronth.crt"
chmod -R a+rX "$T_DIR"

nginx_conf() { # nginx_conf NAME SERVER-BLOCKS
    cat <<NGINX
worker_processes 1;
worker_rlimit_nofile 65536;
pid $T_DIR/$1.pid;
error_log $T_DIR/$1-error.log;
events { worker_connections 16384; }
http {
    access_log off;
    client_body_temp_path $T_DIR/$1-tmp/body;
    proxy_temp_path $T_DIR/$1-tmp/proxy;
    fastcgi_temp_path $T_DIR/$1-tmp/fastcgi;
    uwsgi_temp_path $T_DIR/$1-tmp/uwsgi;
    scgi_temp_path $T_DIR/$1-tmp/scgi;
    keepalive_requests 100000000;
    keepalive_timeout 600s;
    default_type application/octet-stream;
    ssl_protocols TLSv1.2 TLSv1.3;
    $2
}
NGINX
}
# the upstream, on LOAD_CPU
nginx_conf up "server {
        listen 127.0.0.2:443 ssl$UP_H2 backlog=4096;
        ssl_certificate $T_DIR/up.pem;
        ssl_certificate_key $T_DIR/up.key;
        root $T_DIR/www;
    }" > "$T_DIR/up.conf"
# anchor: nginx terminating h2, proxy_pass to the upstream over TLS (verified), on PROXY_CPU
nginx_conf px "upstream up_https { server 127.0.0.2:443; keepalive 64; }
    proxy_http_version 1.1;
    proxy_set_header Connection \"\";
    server {
        listen 127.0.0.5:443 ssl http2 backlog=4096;
        ssl_certificate $T_DIR/front.pem;
        ssl_certificate_key $T_DIR/front.key;
        location / {
            proxy_pass https://up_https;
            proxy_ssl_verify on;
            proxy_ssl_protocols TLSv1.2 TLSv1.3; # 1.22's default stops at 1.2; airlock and HAProxy do 1.3
            proxy_ssl_trusted_certificate $T_DIR/upca.pem;
            proxy_ssl_name upstream.test;
            proxy_ssl_server_name on;
            proxy_ssl_session_reuse on;
        }
    }" > "$T_DIR/px.conf"

# anchor: HAProxy (as in http_bench.sh), on PROXY_CPU
cat > "$T_DIR/ha.cfg" <<HAP
global
    nbthread 1
    maxconn 9000
    pidfile $T_DIR/ha.pid
    ssl-default-bind-options ssl-min-ver TLSv1.2
    ssl-default-server-options ssl-min-ver TLSv1.2
defaults
    mode http
    option http-keep-alive
    http-reuse always
    timeout connect 5s
    timeout client 600s
    timeout server 600s
    maxconn 9000
frontend fe_https
    bind 127.0.0.7:443 backlog 4096 ssl crt $T_DIR/fronth.crt alpn h2,http/1.1
    default_backend be_https
backend be_https
    server up 127.0.0.2:443 ssl verify required ca-file $T_DIR/upca.pem sni str(upstream.test) verifyhost upstream.test alpn h2,http/1.1
HAP
start_haproxy() {
    [ -n "$NO_HAPROXY" ] && return 0
    taskset -c "$PROXY_CPU" haproxy -D -f "$T_DIR/ha.cfg" > "$T_DIR/ha.log" 2>&1 &&
        t_wait_port 127.0.0.7 443 || { cat "$T_DIR/ha.log"; NO_HAPROXY=1; }
}

log "machine: $(lscpu | awk -F: '/Model name/ {gsub(/^ +/, "", $2); print $2}'), $(getconf _NPROCESSORS_ONLN) cores; $(uname -r)"
log "tools: $(h2load --version | head -1), $(nginx -v 2>&1 | cut -d' ' -f3)$([ -z "$NO_HAPROXY" ] && haproxy -v | head -1 | cut -d' ' -f1-3 | sed 's/^/, /')${NO_MITM:+, no mitmdump}$([ -z "$NO_MITM" ] && mitmdump --version 2>/dev/null | head -1 | tr -s ' ' | sed 's/^/, /')"
log "airlock: $AIRLOCK"
log "settings: h2load -c$CONNS -m$STREAMS -n$N (mitmdump -n$MITM_N), upstream${UP_H2:- http/1.1 only}, RUNS=$RUNS, proxy on CPU $PROXY_CPU, h2load/upstream/dnsmasq on CPU $LOAD_CPU"
log "load before: $(cat /proc/loadavg)"
t_start_resolver || exit 1
nginx -c "$T_DIR/up.conf" -g 'daemon on;' || exit 1
t_wait_port 127.0.0.2 443 || exit 1
printf '#!/bin/sh\nexec taskset -c %s "%s" "$@"\n' "$PROXY_CPU" "$AIRLOCK" > "$T_DIR/airlock-pinned"
chmod +x "$T_DIR/airlock-pinned"
AIRLOCK="$T_DIR/airlock-pinned" t_start_airlock "$T_DIR/allow.yaml" --upstream-ca "$T_DIR/upca.pem" || exit 1
cat "$T_DIR/confdir/mitmproxy-ca-cert.pem" "$T_DIR/upca.pem" > "$T_DIR/clients-ca.pem"
taskset -c "$PROXY_CPU" nginx -c "$T_DIR/px.conf" -g 'daemon on;' || exit 1
t_wait_port 127.0.0.5 443 || exit 1
start_haproxy
if [ -z "$NO_MITM" ]; then
    cp "$T_DIR/confdir/mitmproxy-ca.pem" "$T_DIR/mitm/mitmproxy-ca.pem"
    taskset -c "$PROXY_CPU" mitmdump -q --set flow_detail=0 --set termlog_verbosity=error \
        --set confdir="$T_DIR/mitm" --set connection_strategy=lazy --listen-host 127.0.0.6 -p 443 \
        --mode reverse:https://upstream.test:443 \
        --set ssl_verify_upstream_trusted_ca="$T_DIR/upca.pem" > "$T_DIR/mitm.log" 2>&1 &
    MITM_PID=$!
    t_wait_port 127.0.0.6 443 30 || NO_MITM=1
fi

url() { case $1 in airlock) echo https://bench.test/1k.bin ;; nginx) echo https://bench-nginx.test/1k.bin ;;
    mitmdump) echo https://bench-mitm.test/1k.bin ;; haproxy) echo https://bench-haproxy.test/1k.bin ;; esac; }
pids() { case $1 in airlock) echo "$AIRLOCK_PID" ;; nginx) cat "$T_DIR/px.pid"; pgrep -P "$(cat "$T_DIR/px.pid")" ;;
    mitmdump) echo "$MITM_PID" ;; haproxy) cat "$T_DIR/ha.pid" ;; esac; }
cpu_ticks() { local p; for p in "$@"; do awk '{print $14 + $15}' "/proc/$p/stat"; done | awk '{s += $1} END {print s + 0}'; }
rss_sum() { local p t=0; for p in "$@"; do t=$((t + $(t_rss_kb "$p"))); done; echo $t; }
HZ=$(getconf CLK_TCK)

# correctness gate: an h2 answer with the 1 KiB body through each front end
SUBJ=()
log "correctness gate (HTTP/2, 200, the 1 KiB body)"
all=(airlock nginx)
[ -z "$NO_HAPROXY" ] && all+=(haproxy)
[ -z "$NO_MITM" ] && all+=(mitmdump)
for s in "${all[@]}"; do
    out=$(curl -s -m 10 --http2 --cacert "$T_DIR/clients-ca.pem" -o "$T_DIR/probe" -w '%{http_version} %{http_code}' "$(url $s)")
    if [ "$out" = "2 200" ] && cmp -s "$T_DIR/probe" "$T_DIR/www/1k.bin"; then
        SUBJ+=("$s"); echo "  $s: ok"
    else
        echo "  $s: answered [$out], not the 1 KiB file over h2: its figures are skipped"
    fi
done

bench_h2load() { # bench_h2load SUBJECT
    local s=$1 n=$N p t0 t1 out rps ok sys=- perfpid=
    [ "$s" = mitmdump ] && n=$MITM_N
    p=$(pids "$s" | tr '\n' ' ')
    taskset -c "$LOAD_CPU" h2load -c"$CONNS" -m"$STREAMS" -n"$WARM_N" "$(url "$s")" > /dev/null 2>&1
    if [ "$SYSCALLS" = 1 ]; then
        perf stat -x, -e raw_syscalls:sys_enter -p "$(echo $p | tr ' ' ',')" -o "$T_DIR/sys-$s" &
        perfpid=$!
        sleep 0.3
    fi
    t0=$(cpu_ticks $p)
    out=$(taskset -c "$LOAD_CPU" h2load -c"$CONNS" -m"$STREAMS" -n"$n" "$(url "$s")" 2>&1)
    t1=$(cpu_ticks $p)
    if [ -n "$perfpid" ]; then kill -INT "$perfpid"; wait "$perfpid" 2>/dev/null; fi
    rps=$(awk '/^finished in/ {print $4}' <<< "$out")
    ok=$(awk '/^requests:/ {print $8}' <<< "$out")
    proto=$(awk -F': ' '/^Application protocol/ {print $2}' <<< "$out")
    if [ -z "$rps" ] || [ "${ok:-0}" -ne "$n" ] || [ "$proto" != h2 ]; then
        echo "  $s: h2load: $(grep -E '^requests:|^status codes|protocol' <<< "$out" | tr '\n' ' ')"
        [ -z "$rps" ] && return 1
    fi
    local cpu_us
    cpu_us=$(awk -v t=$((t1 - t0)) -v hz="$HZ" -v n="$n" 'BEGIN {printf "%.2f", t / hz * 1e6 / n}')
    [ -s "$T_DIR/sys-$s" ] && sys=$(awk -F, -v n="$n" '/raw_syscalls:sys_enter/ {printf "%.2f", $1 / n}' "$T_DIR/sys-$s")
    record rps "$s" "$rps"
    record cpu_us "$s" "$cpu_us"
    [ "$sys" != - ] && record sys "$s" "$sys"
    printf '  %-9s %10s req/s  %7s us CPU/request  %6s syscalls/request  (%s of %s succeeded, %s)\n' \
        "$s" "$rps" "$cpu_us" "$sys" "$ok" "$n" "$proto"
}

for run in $(seq 1 "$RUNS"); do
    log "run $run/$RUNS"
    for s in "${SUBJ[@]}"; do bench_h2load "$s"; done
done

# memory per idle h2 connection (one GET each, then idle), airlock and nginx
bench_idle() { # bench_idle SUBJECT ADDR SNI
    local p base idle line
    p=$(pids "$1" | tr '\n' ' ')
    base=$(rss_sum $p)
    coproc IDLE { exec "$PY" "$HERE/h2_idle_conns.py" "$2" 443 "$3" "$T_DIR/clients-ca.pem" /1k.bin "$IDLE_CONNS" 2>&1; }
    local in=${IDLE[0]} outfd=${IDLE[1]} pid=$IDLE_PID
    if ! read -r -t 300 -u "$in" line || [ "${line%% *}" != idle ]; then
        echo "  idle $1: client failed [$line]"; kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; return 1
    fi
    sleep 2.5 # past airlock's quiet-time heap trim, the same wait for both
    idle=$(rss_sum $p)
    echo go >&"$outfd"
    read -r -t 60 -u "$in" _
    wait "$pid" 2>/dev/null
    local kb
    kb=$(awk -v a="$idle" -v b="$base" -v n="$IDLE_CONNS" 'BEGIN {printf "%.1f", (a - b) / n}')
    record idle_kb "$1" "$kb"
    printf '  idle %-9s RSS %6d KB -> %6d KB with %s idle h2 connections (%s): %s KB per connection\n' \
        "$1" "$base" "$idle" "$IDLE_CONNS" "$line" "$kb"
}
# each on a freshly started proxy, warmed by 3 requests (after the load runs the allocator
# holds freed memory that new connections reuse: nginx showed 0 KB per connection)
warm() { local i; for i in 1 2 3; do curl -s -o /dev/null -m 10 --http2 --cacert "$T_DIR/clients-ca.pem" "$1"; done; }
log "memory per idle h2 connection ($IDLE_CONNS connections, one GET each; fresh proxies)"
for s in "${SUBJ[@]}"; do
    case $s in
        airlock)
            t_stop_airlock
            AIRLOCK="$T_DIR/airlock-pinned" t_start_airlock "$T_DIR/allow.yaml" --upstream-ca "$T_DIR/upca.pem" || exit 1
            warm "$(url airlock)"
            bench_idle airlock 127.0.0.1 bench.test ;;
        nginx)
            kill "$(cat "$T_DIR/px.pid")"
            until_ok '! [ -f "$T_DIR/px.pid" ]' 10
            taskset -c "$PROXY_CPU" nginx -c "$T_DIR/px.conf" -g 'daemon on;' || exit 1
            t_wait_port 127.0.0.5 443 || exit 1
            warm "$(url nginx)"
            bench_idle nginx 127.0.0.5 bench-nginx.test ;;
        haproxy)
            kill "$(cat "$T_DIR/ha.pid")"
            until_ok '! kill -0 "$(cat "$T_DIR/ha.pid")" 2>/dev/null' 10
            rm -f "$T_DIR/ha.pid"
            start_haproxy
            warm "$(url haproxy)"
            bench_idle haproxy 127.0.0.7 bench-haproxy.test ;;
    esac
done

echo
log "load after: $(cat /proc/loadavg)"
log "summary: $RUNS run(s); medians"
"$PY" - "$RES" "$CONNS" "$STREAMS" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    m, s, v = line.split()
    rows.setdefault((m, s), []).append(float(v))
med = {k: statistics.median(v) for k, v in rows.items()}
ALL = ("airlock", "nginx", "haproxy", "mitmdump")
for m, label, unit in (("rps", "requests/s", ""), ("cpu_us", "CPU per request", " us"),
                       ("sys", "system calls per request", ""), ("idle_kb", "RSS per idle h2 connection", " KB")):
    have = [s for s in ALL if (m, s) in med]
    if not have:
        continue
    print("  %-28s %s" % (label, "   ".join("%s %.2f%s (%s)" % (s, med[(m, s)], unit,
          "/".join("%g" % x for x in rows[(m, s)])) for s in have)))
a = med.get(("rps", "airlock"))
relays = [(med[("rps", r)], r) for r in ("nginx", "haproxy") if ("rps", r) in med]
if a and relays:
    v, r = max(relays)
    print("  requests/s airlock/best relay (%s) %.2fx (goal >= 1x)" % (r, a / v))
idle = [(med[("idle_kb", r)], r) for r in ("nginx", "haproxy") if ("idle_kb", r) in med]
if ("idle_kb", "airlock") in med and idle:
    v, r = min(idle)
    k = med[("idle_kb", "airlock")]
    print("  idle h2 connection airlock %.1f KB, best relay (%s) %.1f KB: %s" % (
        k, r, v, "met" if k <= v else "MISSED"))
# the same as a markdown table (tests/bench/README.md, issue 34's table): medians, then the
# ratio to the better relay (requests/s: airlock / better; CPU and memory: better / airlock, so
# > 1 is airlock ahead everywhere)
have = [s for s in ("airlock", "nginx", "haproxy") if ("rps", s) in med or ("idle_kb", s) in med]
print()
print("| %s-c%s -m%s | %s | airlock / better relay |" % ("HTTP/2, h2load ", sys.argv[2], sys.argv[3],
      " | ".join(have)))
print("|" + " --- |" * (len(have) + 2))
for m, label, fmt, up in (("rps", "requests/s", "%.0f", 1), ("cpu_us", "CPU per request, us", "%.2f", 0),
                          ("sys", "system calls per request", "%.2f", 0),
                          ("idle_kb", "RSS per idle h2 connection, KB", "%.1f", 0)):
    cells = [(fmt % med[(m, s)]) if (m, s) in med else "-" for s in have]
    rel = [med[(m, r)] for r in ("nginx", "haproxy") if (m, r) in med]
    ratio = "-"
    if (m, "airlock") in med and rel and med[(m, "airlock")] > 0:
        a_v = med[(m, "airlock")]
        ratio = "%.2fx" % (a_v / max(rel) if up else min(rel) / a_v)
    print("| %s | %s | %s |" % (label, " | ".join(cells), ratio))
print()
for other, goal in (("nginx", 1.0), ("haproxy", 1.0), ("mitmdump", 30.0)):
    o = med.get(("rps", other))
    if a and o:
        print("  requests/s airlock/%-8s %.2fx (goal >= %gx)" % (other, a / o, goal))
    c, co = med.get(("cpu_us", "airlock")), med.get(("cpu_us", other))
    if c and co:
        print("  CPU/request airlock/%-7s %.2fx" % (other, c / co))
PY
if [ -n "${OUT:-}" ]; then mkdir -p "$OUT" && cp "$RES" "$OUT/results.txt"; fi
exit 0
