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
#   tests/bench/leak_bench.sh   RUNS=3 DURATION=5 CONNS=50 UPLOAD_MB=1024 SECRETS=32
#                               PROXY_CPU=0 LOAD_CPU=1 AIRLOCK=binary (default build/airlock)
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
: "${AIRLOCK:=$ROOT/build/airlock}"
export AIRLOCK
RUNS=${RUNS:-3}
DURATION=${DURATION:-5}
CONNS=${CONNS:-50}
UPLOAD_MB=${UPLOAD_MB:-1024}
SECRETS=${SECRETS:-32}
PROXY_CPU=${PROXY_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
if [ -z "${AIRLOCK_IN_NETNS:-}" ]; then
    for tool in wrk nginx dnsmasq taskset; do
        command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed" >&2; exit 77; }
    done
fi
. "$ROOT/tests/integration/lib.sh"
t_enter_netns "$@"
taskset -p -c "$LOAD_CPU" $$ > /dev/null

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
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.3", 80)); s.listen(64)
while True:
    c, _ = s.accept(); threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
ip addr add 127.0.0.3/8 dev lo 2>/dev/null || true
taskset -c "$LOAD_CPU" "$PY" "$T_DIR/sink.py" &
T_PIDS+=($!)
t_wait_port 127.0.0.3 80 || exit 1
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
printf '#!/bin/sh\nexec taskset -c %s "%s" "$@"\n' "$PROXY_CPU" "$AIRLOCK" > "$T_DIR/airlock-pinned"
chmod +x "$T_DIR/airlock-pinned"
AIRLOCK="$T_DIR/airlock-pinned" t_start_airlock "$T_DIR/allow.yaml" \
    --replacements "$T_DIR/repl.json" --allow-upstream-cidr 127.0.0.3/32 || exit 1
curl -s -o /dev/null --resolve bench.test:80:127.0.0.1 http://bench.test/1k.bin

cpu_ticks() { awk '{print $14 + $15}' "/proc/$AIRLOCK_PID/stat"; }
hz=$(getconf CLK_TCK)
run() { # run off|on: swaps the replacements in; prints req/s, us CPU/req, upload MB/s, CPU s/GiB
    cp "$T_DIR/$1.json" "$T_DIR/repl.json"
    t_reload > /dev/null
    local c0 c1 c2 t0 t1
    c0=$(cpu_ticks)
    wrk -t1 -c "$CONNS" -d "${DURATION}s" -H 'Host: bench.test' http://127.0.0.1/1k.bin \
        > "$T_DIR/wrk.out"
    c1=$(cpu_ticks)
    t0=$(date +%s%N)
    head -c "$((UPLOAD_MB * 1048576))" /dev/zero |
        curl -s -o /dev/null -T - --resolve sink.test:80:127.0.0.1 http://sink.test/up
    t1=$(date +%s%N)
    c2=$(cpu_ticks)
    awk -v t=$((c1 - c0)) -v u=$((c2 - c1)) -v hz="$hz" -v ns=$((t1 - t0)) -v mb="$UPLOAD_MB" '
        / requests in / {n = $1} /^Requests\/sec/ {r = int($2)}
        END {printf "%d %.1f %.0f %.2f\n", r, t * 1e6 / hz / n, mb / (ns / 1e9), u / hz / (mb / 1024)}' \
        "$T_DIR/wrk.out"
}
median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

: > "$T_DIR/off.txt"
: > "$T_DIR/on.txt"
run off > /dev/null # warm-up
for i in $(seq 1 "$RUNS"); do
    a=$(run off); b=$(run on)
    echo "run $i: no guard [$a]  guard [$b]   (req/s, us CPU/req, upload MB/s, CPU s/GiB)"
    echo "$a" >> "$T_DIR/off.txt"
    echo "$b" >> "$T_DIR/on.txt"
done
echo "answers other than allowed in the log (must be 0): $(grep -vc '^allowed\|^===\|^DNS' "$T_DIR/net.log")"
for k in 1:requests/s 2:"CPU us per request" 3:"upload MB/s" 4:"CPU s per GiB uploaded"; do
    f=${k%%:*} name=${k#*:}
    off=$(cut -d' ' -f"$f" "$T_DIR/off.txt" | median); on=$(cut -d' ' -f"$f" "$T_DIR/on.txt" | median)
    echo "median $name: no guard $off, guard ($SECRETS secrets, 8 canaries) $on, ratio guard/none $(awk -v a="$on" -v b="$off" 'BEGIN {printf "%.3f", a / b}')"
done
t_stop_airlock
