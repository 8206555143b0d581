#!/bin/bash
# The cost of --metrics (issue 31): keep-alive HTTPS requests per second (wrk, 1 KiB responses
# from nginx over HTTPS, airlock intercepting) and airlock's CPU time per request, with airlock
# run three ways, one after the other in rounds (off, metrics, metrics+events, off, ...) so that
# drift on a shared machine hits every way alike:
#   off             no --metrics (the counters are still bumped: they cost an increment)
#   metrics         --metrics 127.0.0.1:9464, scraped every SCRAPE_S seconds by a
#                   Prometheus-style client (one GET /metrics per scrape, new connection each)
#   metrics+events  the same, and --events FILE (every decision also written as JSON)
#   hold            no --metrics; the allowlist says `on_block: hold` and --control is open
#                   (issue 32: what holding costs the requests that are not held; not in the
#                   default WAYS)
# Prints each run, the medians and the ratios against off; never fails on a timing.
#
#   tests/bench/metrics_bench.sh   RUNS=3 DURATION=10 WARMUP=2 CONNS=50 SCRAPE_S=1
#                                  WAYS="off metrics metrics+events" PROXY_CPU=0 LOAD_CPU=1
#                                  PIN=1 AIRLOCK=binary (default build/airlock)
# Each way starts a fresh airlock (pinned to PROXY_CPU; wrk, nginx, dnsmasq and the scraper on
# LOAD_CPU) and warms it (WARMUP seconds of the same load) before the measured run. OUT=dir
# keeps the raw results (METRIC SUBJECT VALUE), as ab.sh reads them.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
: "${AIRLOCK:=$ROOT/build/airlock}"
export AIRLOCK
RUNS=${RUNS:-3}
DURATION=${DURATION:-10}
WARMUP=${WARMUP:-2}
CONNS=${CONNS:-50}
SCRAPE_S=${SCRAPE_S:-1}
WAYS=${WAYS:-off metrics metrics+events}
PROXY_CPU=${PROXY_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
PIN=${PIN:-1}
if [ -z "${AIRLOCK_IN_NETNS:-}" ]; then
    [ -x "$AIRLOCK" ] || { echo "no airlock binary at $AIRLOCK" >&2; exit 2; }
    for tool in wrk nginx dnsmasq taskset curl; do
        command -v "$tool" > /dev/null || { echo "SKIP: $tool is not installed" >&2; exit 77; }
    done
fi
. "$ROOT/tests/integration/lib.sh"
t_enter_netns "$@"
[ "$PIN" = 1 ] && taskset -p -c "$LOAD_CPU" $$ > /dev/null

RES="$T_DIR/results"
: > "$RES"
SCRAPER_PID=
m_cleanup() {
    [ -n "$SCRAPER_PID" ] && kill "$SCRAPER_PID" 2>/dev/null
    t_cleanup
}
trap m_cleanup EXIT
trap 'exit 130' INT TERM
log() { echo "[$(date +%T)] $*"; }
record() { echo "$1 $2 $3" >> "$RES"; } # record METRIC SUBJECT VALUE
forget_pid() { # drops a stopped pid from lib.sh's list so the cleanup never signals it again
    local p keep=()
    for p in "${T_PIDS[@]}"; do [ "$p" != "$1" ] && keep+=("$p"); done
    T_PIDS=("${keep[@]}")
}
sched_run_ns() { awk '{ r += $1 } END { printf "%.0f\n", r }' /proc/"$1"/task/*/schedstat 2>/dev/null; }
now_ns() { date +%s%N; }

# ---- fixtures: nginx over HTTPS on 127.0.0.2:443, the test CA, bench.test allowed ------------
cat > "$T_DIR/allow.yaml" <<'YAML'
domains: ["bench.test"]
YAML
printf 'domains: ["bench.test"]\non_block: hold\nhold_seconds: 30\n' > "$T_DIR/allow-hold.yaml"
t_start_resolver || exit 1
t_upstream_ca
t_upstream_cert "DNS:bench.test" "$T_DIR/up"
t_start_nginx "listen 127.0.0.2:443 ssl; ssl_certificate $T_DIR/up.pem; ssl_certificate_key $T_DIR/up.key; access_log off; keepalive_requests 100000000;" || exit 1
head -c 1024 /dev/urandom > "$T_DIR/www/1k.bin"
if [ "$PIN" = 1 ]; then
    printf '#!/bin/sh\nexec taskset -c %s "%s" "$@"\n' "$PROXY_CPU" "$AIRLOCK" > "$T_DIR/airlock-pinned"
else
    printf '#!/bin/sh\nexec "%s" "$@"\n' "$AIRLOCK" > "$T_DIR/airlock-pinned"
fi
chmod +x "$T_DIR/airlock-pinned"

# A Prometheus-style scraper: GET /metrics every SCRAPE_S seconds on a new connection, as
# Prometheus does with its default settings against a target that closes (airlock's listener
# answers one request per connection); counts scrapes and bytes into $T_DIR/scrapes.
cat > "$T_DIR/scraper.py" <<'PY'
import sys, time, urllib.request
every, out = float(sys.argv[1]), sys.argv[2]
n = size = bad = 0
nxt = time.monotonic()
while True:
    try:
        req = urllib.request.Request("http://127.0.0.1:9464/metrics",
                                     headers={"Accept": "text/plain;version=0.0.4"})
        with urllib.request.urlopen(req, timeout=5) as r:
            size += len(r.read())
        n += 1
    except Exception:
        bad += 1
    with open(out, "w") as f:
        f.write("%d %d %d\n" % (n, size, bad))
    nxt += every
    time.sleep(max(0.0, nxt - time.monotonic()))
PY

start_way() { # start_way WAY
    local args=() allow="$T_DIR/allow.yaml"
    case $1 in
        off) ;;
        hold) allow="$T_DIR/allow-hold.yaml" args=(--control "$T_DIR/control.sock") ;;
        metrics) args=(--metrics 127.0.0.1:9464) ;;
        metrics+events) args=(--metrics 127.0.0.1:9464 --events "$T_DIR/events.jsonl") ;;
        *) echo "unknown way $1" >&2; return 1 ;;
    esac
    rm -f "$T_DIR/events.jsonl"
    AIRLOCK="$T_DIR/airlock-pinned" t_start_airlock "$allow" \
        --upstream-ca "$T_DIR/upca.pem" "${args[@]}" || return 1
    if [ "$1" = metrics ] || [ "$1" = metrics+events ]; then
        : > "$T_DIR/scrapes"
        "$PY" "$T_DIR/scraper.py" "$SCRAPE_S" "$T_DIR/scrapes" &
        SCRAPER_PID=$!
    fi
}
stop_way() {
    if [ -n "$SCRAPER_PID" ]; then
        kill "$SCRAPER_PID" 2>/dev/null; wait "$SCRAPER_PID" 2>/dev/null; SCRAPER_PID=
    fi
    t_stop_airlock
    forget_pid "$AIRLOCK_PID"
}

# One measured wrk run on the current airlock: requests/s and airlock's CPU microseconds per
# request (its threads' time on a CPU over the window, /proc schedstat).
measure() { # measure WAY RUN
    local way=$1 run=$2 url=https://bench.test/1k.bin out r0 r1 t0 t1 rps reqs cpu_us util s0=0
    wrk -t1 -c"$CONNS" -d"${WARMUP}s" "$url" > /dev/null 2>&1
    [ -n "$SCRAPER_PID" ] && read -r s0 _ < "$T_DIR/scrapes"
    r0=$(sched_run_ns "$AIRLOCK_PID"); t0=$(now_ns)
    out=$(wrk -t1 -c"$CONNS" -d"${DURATION}s" "$url" 2>&1)
    t1=$(now_ns); r1=$(sched_run_ns "$AIRLOCK_PID")
    rps=$(awk '/^Requests\/sec:/ {print $2}' <<< "$out")
    reqs=$(awk '/requests in/ {print $1}' <<< "$out")
    if [ -z "$rps" ] || [ "${reqs:-0}" -eq 0 ]; then
        echo "  $way: wrk failed: $(tail -3 <<< "$out" | tr '\n' ' ')"
        return 1
    fi
    cpu_us=$(awk -v c=$((r1 - r0)) -v n="$reqs" 'BEGIN {printf "%.2f", c / 1e3 / n}')
    util=$(awk -v c=$((r1 - r0)) -v ns=$((t1 - t0)) 'BEGIN {printf "%.0f", c / ns * 100}')
    record https.ka.rps "airlock-$way" "$rps"
    record https.ka.cpu_us "airlock-$way" "$cpu_us"
    local note="" n size bad errs
    errs=$(grep -E 'Socket errors|Non-2xx' <<< "$out" | tr -s ' ' | tr '\n' ';')
    if [ -n "$SCRAPER_PID" ]; then
        read -r n size bad < "$T_DIR/scrapes"
        note="; $((n - s0)) scrapes in the window ($bad failed in all, ${size} bytes in all)"
    fi
    [ "$way" = metrics+events ] &&
        note="$note; $(wc -l < "$T_DIR/events.jsonl") JSON events"
    printf '  run %d %-15s %9s req/s, %6s us CPU/request, on-CPU %3s%%%s %s\n' \
        "$run" "$way" "$rps" "$cpu_us" "$util" "$note" "$errs"
}

log "airlock: $AIRLOCK"
log "settings: wrk -t1 -c$CONNS -d${DURATION}s HTTPS keep-alive 1 KiB (after ${WARMUP}s warm-up), RUNS=$RUNS, ways: $WAYS, scrape every ${SCRAPE_S}s, pinned $PIN (airlock CPU $PROXY_CPU, the rest CPU $LOAD_CPU)"
log "load before: $(cat /proc/loadavg)"
CA="$T_DIR/confdir/mitmproxy-ca-cert.pem"
for run in $(seq 1 "$RUNS"); do
    for way in $WAYS; do
        start_way "$way" || exit 1
        code=$(curl -s -o /dev/null -m 10 -w '%{http_code}' --cacert "$CA" https://bench.test/1k.bin)
        if [ "$code" != 200 ]; then
            echo "  $way: the probe request answered [$code], not 200: skipped"
        else
            if [ -n "$SCRAPER_PID" ] && ! curl -sf -m 5 -o /dev/null http://127.0.0.1:9464/metrics; then
                echo "  $way: /metrics does not answer"
            fi
            measure "$way" "$run"
        fi
        stop_way
    done
done
log "load after: $(cat /proc/loadavg)"
log "medians over $RUNS run(s), ratio against off"
"$PY" - "$RES" <<'PY'
import statistics, sys
vals = {}
for line in open(sys.argv[1]):
    m, s, v = line.split()
    vals.setdefault(m, {}).setdefault(s[len("airlock-"):], []).append(float(v))
for m, label in (("https.ka.rps", "req/s"), ("https.ka.cpu_us", "us CPU/request")):
    ways = vals.get(m, {})
    base = statistics.median(ways["off"]) if ways.get("off") else None
    for way, xs in ways.items():
        med = statistics.median(xs)
        ratio = "%.3f" % (med / base) if base else "-"
        print("  %-15s %-15s %10.2f   ratio %s   (runs: %s)" % (
            way, label, med, ratio, " ".join("%g" % x for x in xs)))
PY
if [ -n "${OUT:-}" ]; then mkdir -p "$OUT" && cp "$RES" "$OUT/results.txt"; fi
exit 0
