#!/bin/bash
# The cost of the secret guard (issue 21 part 2): keep-alive requests per second (wrk, 1 KiB
# responses from nginx, plain HTTP, as in budget_bench.sh) and a 1 GiB upload through one
# airlock, with a replacements file whose real values and canaries the guard scans every
# request for (URL, headers and the streamed body), and with an empty one (no guard). The same
# process serves both: SIGHUP swaps the replacements between runs, which alternate (off, on,
# off, on, ...) so that drift on a shared machine hits both alike. Prints each run, the
# medians and the ratios (requests/s, airlock CPU per request, upload MB/s and airlock CPU per
# GiB); never fails on a timing.
#
# The upload's body is BODY=random (64 MiB of random bytes, repeated), base64 (the base64 of
# random bytes: text made of the patterns' own alphabet) or zero (/dev/zero).
#
#   tests/bench/leak_bench.sh   RUNS=3 DURATION=5 CONNS=50 UPLOAD_MB=1024 SECRETS=32
#                               BODY=random TLS=0 PIN=1 PERF=0 PROXY_CPU=0 LOAD_CPU=1
#                               AIRLOCK=binary (default build/airlock) OUT=dir
# OUT=dir writes the medians to dir/results.txt (METRIC SUBJECT VALUE) for ab.sh.
# TLS=1 sends the upload over HTTPS (TLS from curl to airlock and from airlock to the sink, as
# an agent's upload to an allowed API goes). PIN=0 leaves every process unpinned. PERF=1 also samples airlock with perf during each
# guarded upload and prints the share of its CPU time spent in the guard's own functions (the
# scanner, addon_leak_*, and the hold-back in proxy/px_stage_leak.c, px__leak_*): a figure that does not move with
# the machine's load the way CPU per GiB does.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
: "${AIRLOCK:=$ROOT/build/airlock}"
export AIRLOCK_WORKERS=${AIRLOCK_WORKERS:-1} # one event loop unless asked (the default is one per CPU)
export AIRLOCK
RUNS=${RUNS:-3}
DURATION=${DURATION:-5}
CONNS=${CONNS:-50}
UPLOAD_MB=${UPLOAD_MB:-1024}
SECRETS=${SECRETS:-32}
PROXY_CPU=${PROXY_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
BODY=${BODY:-random}
PERF=${PERF:-0}
PERF_HZ=${PERF_HZ:-9999}
TLS=${TLS:-0}
PERF_RUN=0
PIN=${PIN:-1}
if [ -z "${AIRLOCK_IN_NETNS:-}" ]; then
    for tool in wrk nginx dnsmasq taskset; do
        command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed" >&2; exit 77; }
    done
fi
. "$ROOT/tests/integration/lib.sh"
t_enter_netns "$@"
[ "$PIN" = 1 ] && taskset -p -c "$LOAD_CPU" $$ > /dev/null

t_start_nginx || exit 1
head -c 1024 /dev/urandom > "$T_DIR/www/1k.bin"
# the upload's sink: reads a chunked or sized body to its end, answers 200
cat > "$T_DIR/sink.py" <<'PY'
import socket, sys, threading
def serve(c):
    f = c.makefile("rb", buffering=1 << 20)
    while True:
        head = []
        while True:
            l = f.readline()
            if not l: return
            if l in (b"\r\n", b"\n"): break
            head.append(l.decode("latin-1").strip().lower())
        n = next((int(h.split(":", 1)[1]) for h in head if h.startswith("content-length:")), None)
        if n is not None:
            while n > 0:
                b = f.read(min(n, 1 << 20)); n -= len(b)
                if not b: return
        elif any(h.startswith("transfer-encoding:") for h in head):
            while True:
                size = int(f.readline().split(b";")[0], 16)
                if size == 0:
                    while f.readline() not in (b"\r\n", b"\n", b""): pass
                    break
                left = size + 2
                while left > 0:
                    b = f.read(min(left, 1 << 20)); left -= len(b)
                    if not b: return
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n")
def serve_tls(c, ctx):
    try:
        c = ctx.wrap_socket(c, server_side=True)
    except OSError:
        return
    serve(c)
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
if len(sys.argv) > 2: # cert key: TLS on 443
    import ssl
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); ctx.load_cert_chain(sys.argv[1], sys.argv[2])
    s.bind(("127.0.0.3", 443)); s.listen(64)
    while True:
        c, _ = s.accept(); threading.Thread(target=serve_tls, args=(c, ctx), daemon=True).start()
s.bind(("127.0.0.3", 80)); s.listen(64)
while True:
    c, _ = s.accept(); threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
SINK_ARGS=() SINK_PORT=80 UP_ARGS=()
if [ "$TLS" = 1 ]; then # the upload goes over TLS on both legs, as an agent's HTTPS upload does
    t_upstream_ca
    t_upstream_cert "DNS:sink.test" "$T_DIR/up"
    SINK_ARGS=("$T_DIR/up.pem" "$T_DIR/up.key") SINK_PORT=443 UP_ARGS=(--upstream-ca "$T_DIR/upca.pem")
fi
ip addr add 127.0.0.3/8 dev lo 2>/dev/null || true
if [ "$PIN" = 1 ]; then
    taskset -c "$LOAD_CPU" "$PY" "$T_DIR/sink.py" "${SINK_ARGS[@]}" &
else
    "$PY" "$T_DIR/sink.py" "${SINK_ARGS[@]}" &
fi
T_PIDS+=($!)
t_wait_port 127.0.0.3 "$SINK_PORT" || exit 1
printf 'domains: ["bench.test", "sink.test"]\n' > "$T_DIR/allow.yaml"
# on: SECRETS masked secrets (real values of 40 bytes) and 8 canaries
{
    printf '{\n'
    for i in $(seq 1 "$SECRETS"); do
        printf '  "sur-%032d": {"value": "real-%035d", "scopes": ["other.test"], "headers": ["Authorization"]},\n' "$i" "$i"
    done
    printf '  "canaries": ['
    for i in $(seq 1 8); do printf '%s{"name": "c%d", "value": "CANARY-%020d"}' "$([ "$i" -gt 1 ] && echo ', ')" "$i" "$i"; done
    printf ']\n}\n'
} > "$T_DIR/on.json"
echo '{}' > "$T_DIR/off.json"
cp "$T_DIR/off.json" "$T_DIR/repl.json"
t_start_resolver --address=/bench.test/127.0.0.2 --address=/sink.test/127.0.0.3
if [ "$PIN" = 1 ]; then
    printf '#!/bin/sh\nexec taskset -c %s "%s" "$@"\n' "$PROXY_CPU" "$AIRLOCK" > "$T_DIR/airlock-pinned"
else
    printf '#!/bin/sh\nexec "%s" "$@"\n' "$AIRLOCK" > "$T_DIR/airlock-pinned"
fi
chmod +x "$T_DIR/airlock-pinned"
AIRLOCK="$T_DIR/airlock-pinned" t_start_airlock "$T_DIR/allow.yaml" \
    --replacements "$T_DIR/repl.json" --allow-upstream-cidr 127.0.0.3/32 "${UP_ARGS[@]}" || exit 1
curl -s -o /dev/null --resolve bench.test:80:127.0.0.1 http://bench.test/1k.bin

case "$BODY" in
random) head -c $((64 << 20)) /dev/urandom > "$T_DIR/body" ;;
base64) head -c $((48 << 20)) /dev/urandom | base64 -w0 > "$T_DIR/body" ;;
zero) ;;
*) echo "BODY must be random, base64 or zero" >&2; exit 2 ;;
esac
body() { # the upload's bytes, endless
    if [ "$BODY" = zero ]; then cat /dev/zero; else while cat "$T_DIR/body"; do :; done; fi
}
CURL_UP=(--resolve sink.test:80:127.0.0.1 http://sink.test/up)
[ "$TLS" = 1 ] && CURL_UP=(--cacert "$T_DIR/confdir/mitmproxy-ca-cert.pem" --http1.1
    --resolve sink.test:443:127.0.0.1 https://sink.test/up)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$AIRLOCK_PID/stat"; }
io_calls() { awk '/^sysc[rw]:/ {n += $2} END {print n}' "/proc/$AIRLOCK_PID/io"; }
hz=$(getconf CLK_TCK)
run() { # run off|on: swaps the replacements in; prints req/s, us CPU/req, upload MB/s, CPU s/GiB
    cp "$T_DIR/$1.json" "$T_DIR/repl.json"
    t_reload > /dev/null
    local c0 c1 c2 t0 t1
    c0=$(cpu_ticks)
    wrk -t1 -c "$CONNS" -d "${DURATION}s" -H 'Host: bench.test' http://127.0.0.1/1k.bin \
        > "$T_DIR/wrk.out"
    c1=$(cpu_ticks)
    local io0 io1
    io0=$(io_calls)
    local perf_pid=
    if [ "$PERF" = 1 ] && [ "$1" = on ]; then
        perf record -q -F "$PERF_HZ" -p "$AIRLOCK_PID" -o "$T_DIR/perf-$PERF_RUN.data" \
            > /dev/null 2>&1 &
        perf_pid=$!
        sleep 0.5
    fi
    t0=$(date +%s%N)
    body | head -c "$((UPLOAD_MB * 1048576))" |
        curl -s -o /dev/null -T - "${CURL_UP[@]}"
    t1=$(date +%s%N)
    if [ -n "$perf_pid" ]; then
        kill -INT "$perf_pid"
        wait "$perf_pid" 2> /dev/null
    fi
    c2=$(cpu_ticks)
    io1=$(io_calls)
    awk -v t=$((c1 - c0)) -v u=$((c2 - c1)) -v hz="$hz" -v ns=$((t1 - t0)) -v mb="$UPLOAD_MB" \
        -v io=$((io1 - io0)) '
        / requests in / {n = $1} /^Requests\/sec/ {r = int($2)}
        END {printf "%d %.1f %.0f %.3f %.1f\n", r, t * 1e6 / hz / n, mb / (ns / 1e9),
             u / hz / (mb / 1024), io / mb}' \
        "$T_DIR/wrk.out"
}
median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

: > "$T_DIR/off.txt"
: > "$T_DIR/on.txt"
run off > /dev/null # warm-up
for i in $(seq 1 "$RUNS"); do
    PERF_RUN=$i
    a=$(run off); b=$(run on)
    echo "run $i: no guard [$a]  guard [$b]   (req/s, us CPU/req, upload MB/s, CPU s/GiB, reads+writes per MB)"
    echo "$a" >> "$T_DIR/off.txt"
    echo "$b" >> "$T_DIR/on.txt"
done
echo "answers other than allowed in the log (must be 0): $(grep -vc '^allowed\|^===\|^DNS' "$T_DIR/net.log")"
for k in 1:requests/s 2:"CPU us per request" 3:"upload MB/s" 4:"CPU s per GiB uploaded" \
    5:"reads+writes per MB uploaded"; do
    f=${k%%:*} name=${k#*:}
    off=$(cut -d' ' -f"$f" "$T_DIR/off.txt" | median); on=$(cut -d' ' -f"$f" "$T_DIR/on.txt" | median)
    echo "median $name: no guard $off, guard ($SECRETS secrets, 8 canaries; $BODY body) $on, ratio guard/none $(awk -v a="$on" -v b="$off" 'BEGIN {printf "%.3f", a / b}')"
    if [ -n "${OUT:-}" ]; then
        m=$(echo "$name" | tr ' /+' '_-p')
        echo "$m airlock-noguard $off" >> "$T_DIR/results.txt"
        echo "$m airlock-guard $on" >> "$T_DIR/results.txt"
    fi
done
if [ -n "${OUT:-}" ]; then mkdir -p "$OUT" && cp "$T_DIR/results.txt" "$OUT/results.txt"; fi
if [ "$PERF" = 1 ]; then
    for i in $(seq 1 "$RUNS"); do
        perf report -i "$T_DIR/perf-$i.data" --no-children --sort sym --stdio -g none 2> /dev/null |
            awk '$1 ~ /%$/ {t += $1} $1 ~ /%$/ && $NF ~ /leak/ {g += $1}
                 END {printf "%.2f\n", (t > 0) ? 100 * g / t : 0}'
    done > "$T_DIR/share.txt"
    [ -n "${PERF_TOP:-}" ] && perf report -i "$T_DIR/perf-1.data" --no-children --sort sym \
        --stdio -g none 2> /dev/null | grep '%' | head -"$PERF_TOP"
    echo "the guard's share of airlock's CPU time during the guarded uploads (perf, %): " \
        "$(tr '\n' ' ' < "$T_DIR/share.txt")median $(median < "$T_DIR/share.txt")"
fi
t_stop_airlock
