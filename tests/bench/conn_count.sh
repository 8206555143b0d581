#!/bin/bash
# Per-connection and bulk counts (issue 34): airlock, nginx and HAProxy side by side, set up
# as http_bench.sh sets them up (same namespace, upstream, configs and CPU placement), and
# measured by counts that a loaded, shared box does not disturb much: system calls (by name)
# and CPU time per new TLS connection; system calls, epoll wake-ups, bytes per read, socket
# buffer sizes, TCP segments and CPU per GiB of a download over HTTP and HTTPS, with the other
# side's cost (curl's and the upstream's CPU and system calls per GiB, the load CPU's busy
# time); RSS per idle HTTP/1.1 connection (one GET each, and after a burst) and per idle HTTP/2
# connection.
#
#   tests/bench/conn_count.sh          (see tests/bench/README.md, issue 34)
#
# Environment: as http_bench.sh: RUNS=3, DURATION=10, CONNS=50, BIG_MB=1024, IDLE_CONNS=300,
# PROFILE=1 (perf record of airlock during one new-connection run), PROFILE_BIG=1 (perf record
# of airlock during each of its downloads; PROFILE_EVENT=e,... records those events instead
# of perf's default, e.g. syscalls:sys_enter_brk to see where they come from), PROFILE_LOAD=1
# (perf record of the whole load CPU during each download, pinned runs only, by process and
# symbol; PROFILE_LOAD_G=1 with call graphs), BIG_HTTP=http1.1
# (curl's protocol option for the downloads: http1.1 or http2; the one used is printed),
# COUNTS="new big idle" (the parts to run), QUEUES=1 (sample the sockets' queues during each
# download), AIRLOCK=binary, OUT=dir.
# Prints figures; never fails on one.
# Run, it starts http_bench.sh in its "counts" mode, which sets everything up and then sources
# this file for the part below the exec.
if [ "${MODE:-}" != counts ]; then
    HERE=$(cd "$(dirname "$0")" && pwd)
    export IDLE_CONNS=${IDLE_CONNS:-300} NGINX_H2=1 NO_MITM=1
    exec "$HERE/http_bench.sh" counts "$@"
fi

# conn_count.sh: counts that hold on a loaded box (system calls, epoll wake-ups, bytes per
# read, socket buffers, CPU time, RSS), never rates.
IO_CALLS='read recvfrom recvmsg readv write writev sendto sendmsg sendfile64 splice epoll_wait epoll_pwait epoll_ctl accept4 close brk mmap munmap madvise mprotect'
# load_cpu_ticks, io_bytes, ipis, tcp_counts, tcp_per, perf_counts and
# load_profile_start/stop: http_bench.sh's.
# ctx_switches PID...: "voluntary nonvoluntary" context switches summed over every thread.
ctx_switches() {
    local p
    for p in "$@"; do cat /proc/"$p"/task/*/status 2>/dev/null; done |
        awk '/^voluntary_ctxt_switches/ { v += $2 } /^nonvoluntary_ctxt_switches/ { n += $2 }
            END { printf "%.0f %.0f\n", v, n }'
}
# proxy_skmem PID...: the skmem:(...) field of each TCP socket of those processes (ss -tm).
proxy_skmem() {
    ss -tmnp 2>/dev/null | grep -A1 -E "pid=($(echo "$@" | tr ' ' '|'))," | grep -o 'skmem:([^)]*)'
}
# One download of the big file, counted: system calls by name per MiB, epoll_wait returns
# per MiB, bytes per read-like call (rchar / calls), proxy CPU per GiB, and the socket
# buffers (ss -tm) of the proxy's two sockets one second in; with QUEUES=1 the queues in those
# sockets and in curl's, sampled; per MiB the wake-ups of each side, the wake-up interrupts
# (IPIs) each CPU took, and curl's system calls.
count_big() { # count_big METRIC SUBJECT URL
    local metric=$1 subj=$2 url=$3 pids ev c r0 w0 r1 w1 io0 io1 out size secs
    pids=$(proxy_pids "$subj")
    ev=raw_syscalls:sys_enter
    for c in $IO_CALLS; do ev="$ev,syscalls:sys_enter_$c"; done
    perf stat -x, -e "$ev" -p "$(echo $pids | tr ' ' ',')" -o "$T_DIR/cnt-$metric-$subj" > /dev/null 2>&1 &
    local perfpid=$!
    local profpid=
    if [ "${PROFILE_BIG:-0}" = 1 ] && [ "$subj" = airlock ] && command -v perf > /dev/null; then
        perf record -q ${PROFILE_EVENT:+-e "$PROFILE_EVENT"} -F 999 --call-graph dwarf,16384 \
            -o "$T_DIR/perf-$metric.data" -p "$AIRLOCK_PID" > /dev/null 2>&1 &
        profpid=$!
    fi
    sleep 0.5
    read -r r0 w0 < <(sched_ns $pids); io0=$(io_bytes $pids)
    local ups u0 u1 c0 c1
    ups=$(upstream_pids); read -r u0 _ < <(sched_ns $ups); c0=$(load_cpu_ticks)
    local pcs0 ucs0 ipi0 lipi0
    pcs0=$(ctx_switches $pids); ucs0=$(ctx_switches $ups)
    local tc0 tc1
    tc0=$(tcp_counts)
    case $PROXY_CPU$LOAD_CPU in *[!0-9]*) ;; *) ipi0=$(ipis "$PROXY_CPU"); lipi0=$(ipis "$LOAD_CPU") ;; esac
    perf stat -x, -e "$ev" -p "$(echo $ups | tr ' ' ',')" -o "$T_DIR/cnt-up-$metric-$subj" > /dev/null 2>&1 &
    local upperf=$!
    load_profile_start "$T_DIR/perf-load-$metric-$subj.data"
    local curl_ev=task-clock,context-switches,raw_syscalls:sys_enter c
    for c in recvfrom read poll write; do curl_ev="$curl_ev,syscalls:sys_enter_$c"; done
    perf stat -x, -e "$curl_ev" -o "$T_DIR/cnt-curl-cpu" curl -s "--${BIG_HTTP:-http1.1}" -o /dev/null --max-time "$BIG_MAX_TIME" "${CURL_TLS[@]}" \
        -w '%{http_code} %{size_download} %{time_total} %{http_version}\n' "$url" > "$T_DIR/cnt-curl" &
    local curlpid=$!
    sleep 1
    local skm
    skm=$(proxy_skmem $pids | sed -E 's/skmem:\(r[0-9]+,rb([0-9]+),t[0-9]+,tb([0-9]+).*/rb \1 tb \2/' |
        sort -u | tr '\n' ';')
    # QUEUES=1: queue depths during the transfer, five samples 0.2 s apart: bytes waiting in the
    # proxy's sockets (received, not yet read: r; written, not yet acknowledged: w) and in
    # curl's (off by default: its ~30 processes run on the load CPU during the transfer)
    local qs= q
    [ "${QUEUES:-0}" = 1 ] && for q in 1 2 3 4 5; do
        qs="$qs $(proxy_skmem $pids |
            sed -E 's/skmem:\(r([0-9]+),rb[0-9]+,t[0-9]+,tb[0-9]+,f[0-9]+,w([0-9]+).*/\1\/\2/' |
            tr '\n' ',')curl:$(ss -tnp 2>/dev/null | awk '/"curl"/ && $2 > 0 { printf "%s", $2 }')"
        sleep 0.2
    done
    wait "$curlpid"
    read -r r1 w1 < <(sched_ns $pids); io1=$(io_bytes $pids)
    read -r u1 _ < <(sched_ns $ups); c1=$(load_cpu_ticks)
    local pcs1 ucs1 ipi1= lipi1=
    pcs1=$(ctx_switches $pids); ucs1=$(ctx_switches $ups)
    tc1=$(tcp_counts)
    [ -n "${ipi0:-}" ] && { ipi1=$(ipis "$PROXY_CPU"); lipi1=$(ipis "$LOAD_CPU"); }
    kill -INT "$upperf" 2>/dev/null; wait "$upperf" 2>/dev/null
    load_profile_stop "$T_DIR/perf-load-$metric-$subj.data" "$metric through $subj"
    kill -INT "$perfpid" 2>/dev/null; wait "$perfpid" 2>/dev/null
    if [ -n "$profpid" ]; then
        kill -INT "$profpid" 2>/dev/null; wait "$profpid" 2>/dev/null
        echo "  --- airlock $metric: self time by symbol (>= 0.5 %)"
        perf report -i "$T_DIR/perf-$metric.data" --no-children --sort dso,symbol --stdio -g none \
            --percent-limit 0.5 2>/dev/null | grep -v '^#' | grep -v '^$' | head -40 | cut -c1-110
        echo "  --- airlock $metric: inclusive time by symbol (>= 2 %)"
        perf report -i "$T_DIR/perf-$metric.data" --children --sort symbol --stdio -g none \
            --percent-limit 2 2>/dev/null | grep -v '^#' | grep -v '^$' | grep -v '\] 0x0000' |
            head -50 | cut -c1-110
        if [ -n "${OUT:-}" ]; then mkdir -p "$OUT" && cp "$T_DIR/perf-$metric.data" "$OUT/"; fi
    fi
    local hv
    read -r _ size secs hv < "$T_DIR/cnt-curl"
    if [ "${size:-0}" -eq 0 ]; then echo "  $metric $subj: download failed"; return 1; fi
    local mib cpu_gib calls reads rsize wakes
    mib=$(awk -v b="$size" 'BEGIN {printf "%.3f", b / 1048576}')
    cpu_gib=$(awk -v c=$((r1 - r0)) -v b="$size" 'BEGIN {printf "%.0f", c / 1e6 / (b / 1073741824)}')
    calls=$(awk -F, -v m="$mib" '/raw_syscalls:sys_enter/ {printf "%.1f", $1 / m}' "$T_DIR/cnt-$metric-$subj")
    reads=$(awk -F, '$3 ~ /sys_enter_(read|recvfrom|recvmsg|readv)$/ {n += $1} END {print n + 0}' "$T_DIR/cnt-$metric-$subj")
    wakes=$(awk -F, -v m="$mib" '$3 ~ /sys_enter_epoll_(p)?wait$/ {n += $1} END {printf "%.1f", n / m}' "$T_DIR/cnt-$metric-$subj")
    rsize=$(awk -v b="$size" -v n="$reads" 'BEGIN { if (n > 0) printf "%.0f", b / n; else print "-" }')
    record "$metric.cpu_ms_gib" "$subj" "$cpu_gib"
    record "$metric.sys_mib" "$subj" "$calls"
    record "$metric.wake_mib" "$subj" "$wakes"
    record "$metric.read_bytes" "$subj" "$rsize"
    printf '  %-10s %-8s HTTP/%s %6.2f s; CPU %5s ms/GiB; per MiB: %6s syscalls, %5s epoll_wait; %6s bytes per read; socket buffers (bytes) %s\n' \
        "$metric" "$subj" "$hv" "$secs" "$cpu_gib" "$calls" "$wakes" "$rsize" "$skm"
    [ -n "$qs" ] && echo "    $metric $subj queues (proxy sockets r/w, curl's receive queue):$qs"
    # the other side of the transfer: curl and the upstream nginx, and the load CPU as a whole
    # (pinned runs: the rate is the slower of the proxy's CPU and this one)
    local curl_ms
    curl_ms=$(awk -F, '$3 ~ /task-clock/ {print $1; exit}' "$T_DIR/cnt-curl-cpu")
    awk -v b="$size" -v c="${curl_ms:-0}" -v u=$((u1 - u0)) -v t0="$c0" -v t1="$c1" -v subj="$subj" -v m="$metric" '
        BEGIN { g = b / 1073741824; split(t0, a, " "); split(t1, z, " ");
            line = sprintf("    %s %s load side per GiB: curl %.0f ms, upstream %.0f ms", m, subj, c / g, u / 1e6 / g);
            if (t0 != "") {
                # /proc/stat ticks (USER_HZ 100): user nice system idle iowait irq softirq
                busy = 0; for (i = 1; i <= 7; i++) if (i != 4 && i != 5) busy += z[i] - a[i];
                idle = (z[4] - a[4]) + (z[5] - a[5]);
                line = line sprintf("; load CPU busy %.0f ms (softirq %.0f ms), idle %.0f %%", busy * 10 / g, (z[7] - a[7]) * 10 / g, 100 * idle / (busy + idle + 1e-9));
            }
            print line }'
    # wake-ups per MiB: how often each side went to sleep and had to be woken (voluntary context
    # switches), and the wake-up interrupts each CPU took (pinned runs)
    local curl_cs
    curl_cs=$(awk -F, '$3 ~ /context-switches/ {print $1; exit}' "$T_DIR/cnt-curl-cpu")
    awk -v m="$mib" -v c="${curl_cs:-0}" -v p0="$pcs0" -v p1="$pcs1" -v u0="$ucs0" -v u1="$ucs1" \
        -v i0="${ipi0:-}" -v i1="$ipi1" -v l0="${lipi0:-}" -v l1="$lipi1" -v subj="$subj" -v t="$metric" '
        BEGIN { split(p0, a, " "); split(p1, b, " "); split(u0, x, " "); split(u1, y, " ")
            line = sprintf("    %s %s wake-ups per MiB: proxy %.1f (+%.1f preempted), curl %.1f, upstream %.1f (+%.1f)",
                t, subj, (b[1] - a[1]) / m, (b[2] - a[2]) / m, c / m, (y[1] - x[1]) / m, (y[2] - x[2]) / m)
            if (i0 != "") line = line sprintf("; IPIs taken: proxy CPU %.1f, load CPU %.1f", (i1 - i0) / m, (l1 - l0) / m)
            print line }'
    record "$metric.curl_cs_mib" "$subj" "$(awk -v m="$mib" -v c="${curl_cs:-0}" 'BEGIN {printf "%.1f", c / m}')"
    [ -n "$lipi1" ] && record "$metric.load_ipi_mib" "$subj" "$(awk -v m="$mib" -v a="$lipi0" -v b="$lipi1" 'BEGIN {printf "%.1f", (b - a) / m}')"
    # TCP segments in the namespace per MiB (both legs, both ways: data and ACKs)
    echo "    $metric $subj TCP per MiB: $(tcp_per "$tc0" "$tc1" "$mib" %.1f)"
    perf_counts "$T_DIR/cnt-curl-cpu" "$mib" "$metric $subj curl per MiB" %.1f
    perf_counts "$T_DIR/cnt-$metric-$subj" "$mib" "$metric $subj per MiB" %.1f
    perf_counts "$T_DIR/cnt-up-$metric-$subj" "$mib" "$metric $subj upstream per MiB" %.1f
}
# RSS per idle HTTP/2 connection (one GET each, then idle past airlock's quiet-time trim).
count_idle_h2() { # count_idle_h2 SUBJECT HOST SNI
    local pids base idle line kb
    pids=$(proxy_pids "$1")
    base=$(rss_kb $pids)
    coproc IDLE2 { exec "$PY" "$HERE/h2_idle_conns.py" "$2" 443 "$3" "$T_DIR/clients-ca.pem" /1k.bin "$IDLE_CONNS" 2>&1; }
    COPROC_PID=$IDLE2_PID
    local in=${IDLE2[0]} outfd=${IDLE2[1]}
    if ! read -r -t 300 -u "$in" line || [ "${line%% *}" != idle ]; then
        echo "  idle h2 $1: client failed [$line]"; kill "$COPROC_PID" 2>/dev/null
        wait "$COPROC_PID" 2>/dev/null; COPROC_PID=; return 1
    fi
    sleep 2.5; idle=$(rss_kb $pids)
    echo go >&"$outfd"; read -r -t 60 -u "$in" _
    wait "$COPROC_PID" 2>/dev/null; COPROC_PID=
    kb=$(awk -v a="$idle" -v b="$base" -v n="$IDLE_CONNS" 'BEGIN {printf "%.2f", (a - b) / n}')
    record h2.idle.kb "$1" "$kb"
    printf '  idle h2    %-8s RSS %6d KB -> %6d KB with %s idle h2 connections (%s): %s KB/conn\n' \
        "$1" "$base" "$idle" "$IDLE_CONNS" "$line" "$kb"
}
restart_subject() { # a fresh proxy, warmed by 3 requests
    case $1 in
        airlock) stop_airlock; start_airlock || exit 1; warm https://bench.test/1k.bin ;;
        nginx) stop_nginx_proxy; start_nginx_proxy || exit 1; warm https://bench-nginx.test/1k.bin ;;
        haproxy) stop_haproxy; start_haproxy || exit 1; warm https://bench-haproxy.test/1k.bin ;;
    esac
}
COUNTS=${COUNTS:-new big idle} # which parts conn_count.sh runs
for run in $(seq 1 "$RUNS"); do
    [[ " $COUNTS " == *" new "* ]] || [[ " $COUNTS " == *" big "* ]] || break
    : > "$T_DIR/net.log"
    log "run $run/$RUNS: new TLS connection per request (wrk -c$CONNS -H 'Connection: close')"
    [[ " $COUNTS " == *" new "* ]] && for s in "${SUBJ_HTTPS[@]}"; do
        SYSCALL_DETAIL=1 bench_wrk https.new "$s" "$(base_url https "$s")/1k.bin" -H 'Connection: close'
    done
    [[ " $COUNTS " == *" big "* ]] || continue
    log "run $run/$RUNS: ${BIG_MB} MiB download, HTTP and HTTPS"
    for s in "${SUBJ_HTTP[@]}"; do count_big http.big "$s" "$(base_url http "$s")/big.bin"; done
    for s in "${SUBJ_HTTPS[@]}"; do count_big https.big "$s" "$(base_url https "$s")/big.bin"; done
done
[[ " $COUNTS " == *" idle "* ]] && log "idle memory ($IDLE_CONNS connections; fresh proxies warmed by 3 requests)"
[[ " $COUNTS " == *" idle "* ]] && for mode in seq burst; do
    restart_subject airlock
    bench_idle airlock "airlock-$mode" "$mode" 127.0.0.1 bench.test
done
[[ " $COUNTS " == *" idle "* ]] && for s in "${SUBJ_HTTPS[@]}"; do
    [ "$s" = airlock ] && continue
    restart_subject "$s"
    bench_idle "$s" "$s-burst" burst "$(getent hosts "${s/#/bench-}.test" | cut -d' ' -f1)" "bench-$s.test"
done
[[ " $COUNTS " == *" idle "* ]] && for s in "${SUBJ_HTTPS[@]}"; do
    restart_subject "$s"
    case $s in
        airlock) count_idle_h2 airlock 127.0.0.1 bench.test ;;
        *) count_idle_h2 "$s" "$(getent hosts "bench-$s.test" | cut -d' ' -f1)" "bench-$s.test" ;;
    esac
done
restart_subject airlock
[ "$PROFILE" = 1 ] && profile_airlock https-newconn https://bench.test/1k.bin -H 'Connection: close'
echo
log "load after: $(cat /proc/loadavg)"
log "summary: $RUNS run(s); medians"
"$PY" - "$RES" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    f = line.split()
    try:
        rows.setdefault((f[0], f[1]), []).append(float(f[2]))
    except (ValueError, IndexError):
        pass
for (m, s) in sorted(rows):
    vals = rows[(m, s)]
    print("  %-22s %-14s median %10.2f  (%s)" % (m, s, statistics.median(vals),
                                                   " ".join("%g" % v for v in vals)))
PY
if [ -n "${OUT:-}" ]; then mkdir -p "$OUT" && cp "$RES" "$OUT/results.txt"; fi
