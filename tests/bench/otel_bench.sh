#!/bin/bash
# The OTLP exporter's own cost (issue 31 part 3, docs/otel.md): the CPU instructions its thread
# spends per exported event, counted by callgrind (exact and repeatable on a loaded machine,
# unlike a rate or a tick count), and the TCP connections it opened to the collector.
#
# In private network namespaces (tests/integration/lib.sh): nginx, the test resolver and the
# collector stand-in (tests/integration/otel_collector.py, mode ok) on loopback; airlock runs
# under `valgrind --tool=callgrind --toggle-collect=px__main` (only the exporter thread's
# function and what it calls is counted) with OTEL_EXPORTER_OTLP_ENDPOINT set; N keep-alive
# requests through it (curl's URL ranges), each an event of the network log. When the
# collector holds N records, airlock is stopped and the instructions are read from
# callgrind's totals. Prints: events, instructions, instructions per event, the collector's
# connections, and (TOP=1) the functions that cost most, inclusive.
#
#   sudo tests/bench/otel_bench.sh       N=2000 TLS=0 TOP=0 AIRLOCK=binary (default build/airlock)
#
# TLS=1: the collector serves https with a test CA (OTEL_EXPORTER_OTLP_CERTIFICATE), which
# airlock builds without https support refuse at start-up. Never fails on a figure.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
: "${AIRLOCK:=$ROOT/build/airlock}"
export AIRLOCK_WORKERS=${AIRLOCK_WORKERS:-1} # one event loop unless asked (the default is one per CPU)
export AIRLOCK
N=${N:-2000}
TLS=${TLS:-0}
TOP=${TOP:-0}
command -v valgrind > /dev/null || { echo "SKIP: valgrind missing"; exit 77; }
. "$ROOT/tests/integration/lib.sh"
t_enter_netns "$@"

printf 'domains: ["nginx.test"]\n' > "$T_DIR/allow.yaml"
t_start_resolver || exit 1
t_start_nginx || exit 1
printf 'hello\n' > "$T_DIR/www/hello.txt"

COL=$T_DIR/col
mkdir -p "$COL"
scheme=http
tlsargs=()
if [ "$TLS" = 1 ]; then
    t_upstream_ca
    t_upstream_cert "IP:127.0.0.2" "$T_DIR/col-srv"
    tlsargs=(--tls-cert "$T_DIR/col-srv.pem" --tls-key "$T_DIR/col-srv.key")
    scheme=https
    export OTEL_EXPORTER_OTLP_CERTIFICATE=$T_DIR/upca.pem
fi
"$PY" "$ROOT/tests/integration/otel_collector.py" --listen 127.0.0.2:4318 --mode ok \
    --out "$COL" "${tlsargs[@]}" 2> "$COL/stderr" &
T_PIDS+=($!)
t_wait_port 127.0.0.2 4318 || exit 1

# airlock under callgrind: a wrapper, since t_start_airlock runs "$AIRLOCK"
REAL_AIRLOCK=$AIRLOCK
cat > "$T_DIR/airlock-cg" <<SH
#!/bin/sh
exec valgrind --tool=callgrind --toggle-collect=px__main \
    --callgrind-out-file="$T_DIR/cg.out" "$REAL_AIRLOCK" "\$@"
SH
chmod +x "$T_DIR/airlock-cg"
AIRLOCK=$T_DIR/airlock-cg
export OTEL_EXPORTER_OTLP_ENDPOINT=$scheme://127.0.0.2:4318 OTEL_BLRP_SCHEDULE_DELAY=200
t_start_airlock "$T_DIR/allow.yaml" || exit 1
curl -s -o /dev/null -m 600 "http://nginx.test/hello.txt?n=[1-$N]"
until_ok '[ "$(cat "$COL/records.jsonl" 2>/dev/null | wc -l)" -ge "$N" ]' 120 ||
    echo "# the collector got $(wc -l < "$COL/records.jsonl" 2>/dev/null) of $N records"
t_stop_airlock
events=$(wc -l < "$T_DIR/net.log")
ir=$(awk '/^(summary|totals):/ {print $2; exit}' "$T_DIR/cg.out")
echo "events $events, exporter instructions $ir, per event $((ir / (events > 0 ? events : 1)))"
conns=$("$PY" -c 'import json,sys; print(len({json.loads(l).get("conn") for l in open(sys.argv[1])}))' \
    "$COL/requests.jsonl")
echo "collector: $(wc -l < "$COL/records.jsonl") records in $(wc -l < "$COL/requests.jsonl") requests over $conns connections"
[ -s "$COL/errors.txt" ] && { echo "collector errors:"; head -3 "$COL/errors.txt"; }
if [ "$TOP" = 1 ]; then
    callgrind_annotate --inclusive=yes "$T_DIR/cg.out" 2> /dev/null | sed -n '1,/^$/d; 1,40p' |
        head -45
fi
exit 0
