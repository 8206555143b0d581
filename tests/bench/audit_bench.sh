#!/bin/bash
# Issue 19: speed and memory of `airlock report`, `replay` and `suggest` on a synthetic
# network log of LINES lines (default 1,000,000), the goal being a report in under 5 s with
# bounded memory. Prints, for each command, the median wall time of RUNS runs (default 3) and
# the largest maximum RSS, measured with /usr/bin/time -f '%e %M'. Also runs report on a log
# 4x larger to show the memory does not grow with the lines (streaming read, capped tables).
#
#   tests/bench/audit_bench.sh [AIRLOCK]      (default build/airlock)
#   LINES=1000000 RUNS=3 KEEP=1 tests/bench/audit_bench.sh
#
# The log mixes what a busy conversation writes: TASK START every 20,000 lines; DNS A/AAAA
# pairs (about 20 %); allowed (about 60 %, a third with [masked: 1]), BLOCKED by host, path,
# method and port, and pre-checks (about 12 %); ERROR lines (3 %); 400s, host mismatches and
# CONNECT refusals; STRIPPED/COLLAPSED/WARNING/TLS REJECTED lines; 600 hosts, paths with ids,
# and 5,000 distinct never-requested DNS names (some high-entropy). Exit 0 unless the setup
# breaks (77 when /usr/bin/time is missing); timings are printed, never asserted.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
AIRLOCK=${1:-$HERE/../../build/airlock}
LINES=${LINES:-1000000}
RUNS=${RUNS:-3}
[ -x /usr/bin/time ] || { echo "SKIP: /usr/bin/time missing (Debian package time)"; exit 77; }
[ -x "$AIRLOCK" ] || { echo "no airlock binary at $AIRLOCK"; exit 1; }
DIR=$(mktemp -d /tmp/airlock-audit-bench.XXXXXX)
[ -n "${KEEP:-}" ] || trap 'rm -rf "$DIR"' EXIT

gen() { # gen N FILE
    awk -v n="$1" 'BEGIN {
        srand(19);
        verbs[0] = "GET"; verbs[1] = "POST"; verbs[2] = "PUT"; verbs[3] = "DELETE";
        for (i = 0; i < n; ) {
            if (i % 20000 == 0) { printf "=== TASK START 2026-02-03T%02d:%02d:00Z ===\n", int(i / 1200000) % 24, int(i / 20000) % 60; i++; continue }
            r = rand(); h = int(rand() * 600); host = "svc" h ".example.test"
            if (r < 0.10) {
                printf "DNS A %s -> 10.199.1.100\n", host; printf "DNS AAAA %s -> NODATA\n", host; i += 2
            } else if (r < 0.105) {
                printf "DNS A %x%x%x.c%d.leak.test -> 10.199.1.100\n", int(rand() * 2^31), int(rand() * 2^31), int(rand() * 2^31), int(rand() * 50); i++
            } else if (r < 0.70) {
                m = (rand() < 0.33) ? " [masked: 1]" : ""
                printf "allowed %s https://%s/v1/items/%d?page=%d -> 200%s\n", verbs[int(rand() * 2)], host, int(rand() * 100000), int(rand() * 9), m; i++
            } else if (r < 0.78) {
                printf "BLOCKED %s https://evil%d.test/upload/%d -> 403\n", verbs[int(rand() * 4)], int(rand() * 40), int(rand() * 1000); i++
            } else if (r < 0.80) {
                printf "BLOCKED DELETE https://%s/v1/items/%d -> 403\n", host, int(rand() * 1000); i++
            } else if (r < 0.81) {
                printf "BLOCKED GET http://%s:8080/admin -> 403\n", host; i++
            } else if (r < 0.815) {
                printf "BLOCKED GET https://%s/a/%%2e%%2e/etc/passwd -> 403\n", host; i++
            } else if (r < 0.845) {
                printf "ERROR GET https://down%d.test/api -> Connection failed: Name or service not known\n", int(rand() * 20); i++
            } else if (r < 0.85) {
                printf "BLOCKED - - -> 400 (malformed request: invalid Host header)\n"; i++
            } else if (r < 0.855) {
                printf "BLOCKED GET https://%s/ -> 403 (host mismatch: header=%s, sni=other.test)\n", host, host; i++
            } else if (r < 0.86) {
                printf "BLOCKED CONNECT evil%d.test:443 -> 403 (tunneling not allowed)\n", int(rand() * 40); i++
            } else if (r < 0.87) {
                printf "STRIPPED header %cauthorization%c from GET https://%s/user (foreign credential blocked)\n", 39, 39, host; i++
            } else if (r < 0.875) {
                printf "COLLAPSED 2 duplicate %cx-api-key%c headers in POST https://%s/v1 (duplicate credential headers removed)\n", 39, 39, host; i++
            } else if (r < 0.88) {
                printf "TLS REJECTED %s (client alert: unknown ca; the client does not trust airlock%cs CA)\n", host, 39; i++
            } else if (r < 0.882) {
                printf "WARNING: Container clock skew detected: x-amz-date=20260203T000000Z, proxy-time=20260203T010000Z (drift=60m). Upstream rejection likely.\n"; i++
            } else {
                printf "allowed GET https://%s/static/app.%d.js -> 200\n", host, int(rand() * 50); i++
            }
        }
    }' > "$2"
}

cat > "$DIR/allow.yaml" <<'YAML'
domains: ["*.example.test"]
url_prefixes:
  - host: "evil1.test"
    path: /upload/*
    methods: [POST]
YAML

measure() { # measure LABEL command...: median wall time and max RSS over RUNS runs
    local label=$1; shift
    local times=() rss=0 t m
    for _ in $(seq 1 "$RUNS"); do
        /usr/bin/time -f '%e %M' -o "$DIR/time" "$@" > /dev/null 2> "$DIR/err"
        local rc=$?
        if [ "$rc" -gt 1 ]; then echo "$label: exit $rc"; cat "$DIR/err"; exit 1; fi
        read -r t m < <(tail -1 "$DIR/time") # "Command exited with ..." comes first
        times+=("$t")
        [ "$m" -gt "$rss" ] && rss=$m
    done
    local med
    med=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}')
    printf '%-34s median %6s s of %s runs (%s), max RSS %6d KiB\n' "$label" "$med" "$RUNS" \
        "$(printf '%s ' "${times[@]}")" "$rss"
}

echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'); airlock: $AIRLOCK"
gen "$LINES" "$DIR/1x.log"
printf 'log: %s lines, %s bytes\n' "$(wc -l < "$DIR/1x.log")" "$(wc -c < "$DIR/1x.log")"
measure "report ($LINES lines)" "$AIRLOCK" report "$DIR/1x.log" -o "$DIR/report.html"
printf 'report page: %s bytes\n' "$(wc -c < "$DIR/report.html")"
measure "report --allowlist ($LINES lines)" "$AIRLOCK" report "$DIR/1x.log" -o "$DIR/report2.html" --allowlist "$DIR/allow.yaml"
measure "replay ($LINES lines)" "$AIRLOCK" replay --allowlist "$DIR/allow.yaml" "$DIR/1x.log"
measure "suggest ($LINES lines)" "$AIRLOCK" suggest "$DIR/1x.log"
# the same log four times: memory must not grow with the lines
RUNS=1 measure "report (4 x $LINES lines)" "$AIRLOCK" report "$DIR/1x.log" "$DIR/1x.log" "$DIR/1x.log" "$DIR/1x.log" -o "$DIR/report4.html"
[ -n "${KEEP:-}" ] && echo "kept $DIR"
exit 0
