#!/bin/bash
# Proxy container start-up: the time from `podman run` of the proxy (dual-homed, as
# airlock-sandbox runs it) to the first passing `podman exec ... airlock health`, median of
# RUNS (10); the same for a whole `airlock-sandbox start` (network, run, health) and for one
# `podman exec airlock health` on a running proxy; and the image size.
#
#   AIRLOCK=build/airlock [AIRLOCK_STATIC_BINARY=...] bash tests/bench/container_start.sh
#
# The static binary: $AIRLOCK when static, else $AIRLOCK_STATIC_BINARY, else a Release build
# in $AIRLOCK_BUILD/container-static. Runs in private namespaces with a private podman
# storage and network config (like tests/integration/test_container.sh) and removes it all.
. "$(dirname "$0")/../integration/lib.sh"
RUNS=${RUNS:-10}
t_enter_netns "$@"

SANDBOX=$AIRLOCK_SRC/container/airlock-sandbox
BUILD_IMAGE=$AIRLOCK_SRC/container/build-image.sh
P=albench
export AIRLOCK_PREFIX=$P AIRLOCK_STATE_DIR=$T_DIR/state AIRLOCK_CONFDIR=$T_DIR/confdir
export AIRLOCK_IMAGE=localhost/albench-proxy:latest AIRLOCK_IMAGE_NAME=localhost/albench-proxy

t_private_podman "$T_DIR" || exit 1

b_cleanup() {
    "$SANDBOX" teardown >/dev/null 2>&1
    t_podman_clear
    grep -o " $T_DIR/[^ ]*" /proc/self/mounts | sort -r | xargs -r -n1 umount -l 2>/dev/null
    t_cleanup
}
trap b_cleanup EXIT

if ! readelf -lW "$AIRLOCK" 2>/dev/null | grep -q 'program interpreter'; then
    STATIC=$AIRLOCK
elif [ -n "${AIRLOCK_STATIC_BINARY:-}" ]; then
    STATIC=$AIRLOCK_STATIC_BINARY
else
    STATIC_DIR=${AIRLOCK_BUILD:-$AIRLOCK_SRC/build}/container-static
    "$BUILD_IMAGE" --build-dir "$STATIC_DIR" > /dev/null 2> "$T_DIR/build.log" || {
        tail -n 20 "$T_DIR/build.log"; exit 1; }
    STATIC=$STATIC_DIR/airlock
fi
IMG=$("$BUILD_IMAGE" --binary "$STATIC" 2>> "$T_DIR/build.log") || {
    tail -n 20 "$T_DIR/build.log"; exit 1; }
"$SANDBOX" setup > /dev/null || exit 1
echo 'domains: ["example.com"]' > "$T_DIR/allow.yaml"
: > "$T_DIR/net.log"

now_ms() { echo $(($(date +%s%N) / 1000000)); }
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : int((v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }

# 1. podman run -> first passing health check, on a network made beforehand
podman network create --internal --disable-dns --subnet 10.199.250.0/24 "$P-conv-b" >/dev/null
run_ms=()
for i in $(seq 1 "$RUNS"); do
    t0=$(now_ms)
    podman run -d --name "$P-proxy-b" --network "$P-egress" \
        --network "$P-conv-b:ip=10.199.250.100" -e PROXY_IP=10.199.250.100 \
        -e UPSTREAM_DNS=10.199.250.1 --cap-drop all --cap-add NET_BIND_SERVICE \
        --security-opt no-new-privileges --read-only \
        -v "$T_DIR/confdir:/mitmproxy-confdir:rw" \
        -v "$T_DIR/allow.yaml:/network-allowlist.json:ro" \
        -v "$T_DIR/net.log:/network-sandbox.log:rw" "$IMG" > /dev/null || exit 1
    tries=0
    until podman exec "$P-proxy-b" /airlock health 2>/dev/null; do
        tries=$((tries + 1))
        [ "$tries" -lt 100 ] || { echo "never healthy"; exit 1; }
        sleep 0.02
    done
    run_ms+=($(($(now_ms) - t0)))
    if [ "$i" = 1 ]; then
        exec_ms=()
        for _ in $(seq 1 "$RUNS"); do
            t1=$(now_ms)
            podman exec "$P-proxy-b" /airlock health || exit 1
            exec_ms+=($(($(now_ms) - t1)))
        done
    fi
    podman rm -f -t 0 "$P-proxy-b" > /dev/null
done
podman network rm -f "$P-conv-b" > /dev/null

# 2. the whole airlock-sandbox start (subnet, network, run, health)
start_ms=()
for i in $(seq 1 "$RUNS"); do
    t0=$(now_ms)
    "$SANDBOX" start b --allowlist "$T_DIR/allow.yaml" --upstream-dns 10.199.250.1 \
        > /dev/null || exit 1
    start_ms+=($(($(now_ms) - t0)))
    "$SANDBOX" stop b || exit 1
done

size=$(podman image inspect --format '{{.Size}}' "$IMG")
bin=$(strip --strip-all -o "$T_DIR/airlock.stripped" "$STATIC" && wc -c < "$T_DIR/airlock.stripped")
echo "image $IMG: $size bytes ($((size / 1024)) KiB); airlock stripped: $bin bytes"
echo "podman run -> healthy: median $(printf '%s\n' "${run_ms[@]}" | median) ms" \
    "(runs: ${run_ms[*]})"
echo "podman exec airlock health on a running proxy: median" \
    "$(printf '%s\n' "${exec_ms[@]}" | median) ms (runs: ${exec_ms[*]})"
echo "airlock-sandbox start (network + run + health): median" \
    "$(printf '%s\n' "${start_ms[@]}" | median) ms (runs: ${start_ms[*]})"
