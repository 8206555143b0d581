#!/bin/bash
# The cost of response scrubbing (issue 33 part 1): one airlock with 40 real values configured
# (SECRETS masked secrets of 40 bytes; the replacements file is the same in every run), started
# alternately with --scrub-responses off and on (off, on, off, on, ...: drift on a shared
# machine hits both alike), each run measuring keep-alive requests per second (wrk, 1 KiB
# answers from nginx) and one download of DOWNLOAD_MB (curl to /dev/null), both over HTTPS
# through airlock to an HTTPS nginx (TLS=0: plain HTTP). Prints each run, the medians and the
# ratios scrub/off (requests/s, airlock CPU per request, download MB/s, airlock CPU per GiB);
# never fails on a timing. The issue's bar: at most 5 % lost on either figure.
#
# The download's body is BODY=random (64 MiB of random bytes, repeated) or base64 (the base64
# of random bytes: text made of the patterns' own alphabet, the scanner's worst ordinary case);
# it holds no value, so the figure is the scan's cost, not the replacements'.
#
#   tests/bench/scrub_bench.sh   RUNS=3 DURATION=5 CONNS=50 DOWNLOAD_MB=1024 SECRETS=40
#                                BODY=random TLS=1 PIN=1 PROXY_CPU=0 LOAD_CPU=1
#                                AIRLOCK=binary (default build/airlock)
# A quick check that it runs: RUNS=1 DURATION=1 DOWNLOAD_MB=64 tests/bench/scrub_bench.sh
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
: "${AIRLOCK:=$ROOT/build/airlock}"
export AIRLOCK_WORKERS=${AIRLOCK_WORKERS:-1} # one event loop unless asked (the default is one per CPU)
export AIRLOCK
RUNS=${RUNS:-3}
DURATION=${DURATION:-5}
CONNS=${CONNS:-50}
DOWNLOAD_MB=${DOWNLOAD_MB:-1024}
SECRETS=${SECRETS:-40}
PROXY_CPU=${PROXY_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
BODY=${BODY:-random}
TLS=${TLS:-1}
PIN=${PIN:-1}
if [ -z "${AIRLOCK_IN_NETNS:-}" ]; then
    for tool in wrk nginx dnsmasq taskset curl openssl; do
        command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed" >&2; exit 77; }
    done
fi
. "$ROOT/tests/integration/lib.sh"
t_enter_netns "$@"
[ "$PIN" = 1 ] && taskset -p -c "$LOAD_CPU" $$ > /dev/null

SCHEME=http UP_ARGS=() CURL_TLS=() NGINX_TLS=
if [ "$TLS" = 1 ]; then
    t_upstream_ca
    t_upstream_cert "DNS:bench.test" "$T_DIR/up"
    SCHEME=https UP_ARGS=(--upstream-ca "$T_DIR/upca.pem")
    CURL_TLS=(--cacert "$T_DIR/confdir/mitmproxy-ca-cert.pem")
    NGINX_TLS="listen 127.0.0.2:443 ssl backlog=4096;
        ssl_certificate $T_DIR/up.pem; ssl_certificate_key $T_DIR/up.key;"
fi
t_start_nginx "$NGINX_TLS" || exit 1
[ "$TLS" = 1 ] && { t_wait_port 127.0.0.2 443 || exit 1; }
head -c 1024 /dev/urandom > "$T_DIR/www/1k.bin"
case "$BODY" in
random) head -c $((64 << 20)) /dev/urandom > "$T_DIR/block" ;;
base64) head -c $((48 << 20)) /dev/urandom | base64 -w0 > "$T_DIR/block" ;;
*) echo "BODY must be random or base64" >&2; exit 2 ;;
esac
while cat "$T_DIR/block"; do :; done 2> /dev/null | head -c "$((DOWNLOAD_MB * 1048576))" \
    > "$T_DIR/www/big.bin"
rm -f "$T_DIR/block"
printf 'domains: ["bench.test"]\n' > "$T_DIR/allow.yaml"
{
    printf '{\n'
    for i in $(seq 1 "$SECRETS"); do
        printf '  "sur-%032d": {"value": "real-%035d", "scopes": ["other.test"], "headers": ["Authorization"]}%s\n' \
            "$i" "$i" "$([ "$i" -lt "$SECRETS" ] && echo ,)"
    done
    printf '}\n'
} > "$T_DIR/repl.json"
t_start_resolver
if [ "$PIN" = 1 ]; then
    printf '#!/bin/sh\nexec taskset -c %s "%s" "$@"\n' "$PROXY_CPU" "$AIRLOCK" > "$T_DIR/airlock-pinned"
else
    printf '#!/bin/sh\nexec "%s" "$@"\n' "$AIRLOCK" > "$T_DIR/airlock-pinned"
fi
chmod +x "$T_DIR/airlock-pinned"

cpu_ticks() { awk '{print $14 + $15}' "/proc/$AIRLOCK_PID/stat"; }
hz=$(getconf CLK_TCK)
run() { # run off|on: a fresh airlock; prints req/s, us CPU/req, download MB/s, CPU s/GiB
    AIRLOCK="$T_DIR/airlock-pinned" t_start_airlock "$T_DIR/allow.yaml" \
        --replacements "$T_DIR/repl.json" --scrub-responses "$1" "${UP_ARGS[@]}" || exit 1
    curl -s -o /dev/null "${CURL_TLS[@]}" "$SCHEME://bench.test/1k.bin" # the first mint
    local c0 c1 c2 t0 t1 got
    c0=$(cpu_ticks)
    wrk -t1 -c "$CONNS" -d "${DURATION}s" "$SCHEME://bench.test/1k.bin" > "$T_DIR/wrk.out" 2>&1
    c1=$(cpu_ticks)
    t0=$(date +%s%N)
    got=$(curl -s -o /dev/null -w '%{size_download}' "${CURL_TLS[@]}" "$SCHEME://bench.test/big.bin")
    t1=$(date +%s%N)
    c2=$(cpu_ticks)
    t_stop_airlock
    [ "$got" = $((DOWNLOAD_MB * 1048576)) ] || echo "download $1: got $got bytes" >&2
    awk -v t=$((c1 - c0)) -v u=$((c2 - c1)) -v hz="$hz" -v ns=$((t1 - t0)) -v mb="$DOWNLOAD_MB" '
        / requests in / {n = $1} /^Requests\/sec/ {r = int($2)}
        END {if (n == 0) n = 1; printf "%d %.1f %.0f %.3f\n", r, t * 1e6 / hz / n,
             mb / (ns / 1e9), u / hz / (mb / 1024)}' "$T_DIR/wrk.out"
}
median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

: > "$T_DIR/off.txt"
: > "$T_DIR/on.txt"
for i in $(seq 1 "$RUNS"); do
    a=$(run off)
    b=$(run on)
    echo "run $i: scrub off [$a]  scrub on [$b]   (req/s, us CPU/req, download MB/s, CPU s/GiB)"
    echo "$a" >> "$T_DIR/off.txt"
    echo "$b" >> "$T_DIR/on.txt"
done
echo "answers other than allowed in the log (must be 0): $(grep -vc '^allowed\|^===\|^DNS' "$T_DIR/net.log")"
for k in 1:requests/s 2:"CPU us per request" 3:"download MB/s" 4:"CPU s per GiB downloaded"; do
    f=${k%%:*} name=${k#*:}
    off=$(cut -d' ' -f"$f" "$T_DIR/off.txt" | median)
    on=$(cut -d' ' -f"$f" "$T_DIR/on.txt" | median)
    echo "median $name: scrub off $off, scrub on ($SECRETS values; $BODY body; $SCHEME) $on, ratio on/off $(awk -v a="$on" -v b="$off" 'BEGIN {printf "%.3f", a / b}')"
done
rm -f "$T_DIR/www/big.bin"
exit 0
