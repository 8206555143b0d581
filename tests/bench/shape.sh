#!/bin/bash
# The shape of the engine (issue 30): the largest files and functions, the boolean flags per
# struct and the number of cross-file calls one HTTPS request makes, for one source tree.
#
#   tests/bench/shape.sh [--static] [SRC]     (SRC: a source tree; default this checkout)
#   tests/bench/shape.sh --selftest           (the analyses on a fixture; no root, ~1 s)
#
# 1. Sizes: every .c outside tests/, per folder; the largest files and functions of the
#    engine's folders (net/ http/ proxy/ app/, those the tree has: an older tree held them all
#    in proxy/). How a function is found and measured: tests/bench/shape.py's header.
# 2. Flags: per struct defined in those folders, its boolean flags. A flag is a bool or
#    one-bit bit-field, or an integer field every store to which (anywhere outside tests/)
#    is a 0/1 constant, a comparison, a negation, a && / || or another flag, never counted
#    nor address-taken: a textual check, so the count is a lower bound ("strict"); "loose"
#    also accepts a store from a plain variable. The full definition and its limits are in
#    shape.py's header; `--selftest` checks each rule on a fixture.
# 3. Calls (skipped with --static): builds the airlock binary of SRC with -O0 -g -fno-inline
#    (gcc, a build dir in a temp dir, -j2), runs it under valgrind --tool=callgrind in private
#    network and mount namespaces (tests/integration/lib.sh: needs root and unshare) with a
#    resolver for *.test (dnsmasq), a local TLS upstream (nginx, a test CA) and an allowlist
#    naming shape.test, and dumps callgrind's counters after each step (callgrind_control):
#      start     start-up until "ready" (not reported)
#      first     one curl, one HTTPS GET allowed (the first: leaf minted, upstream resolved
#                and dialled)
#      again     one curl, one HTTPS GET, a new client connection (leaf cached, upstream
#                connection from the pool)
#      two       one curl, two HTTPS GETs on one client connection
#      h2-again  as again, the client speaking HTTP/2
#      h2-two    as two, HTTP/2 (two streams, one after the other)
#      idle      nothing, as long as a step lasts: the timers' share (noise)
#    HTTP/1.1 unless named h2. A call counts when caller and callee are functions of two
#    different .c files of SRC (not tests/); library code (libc, OpenSSL, libuv, c-ares,
#    nghttp2, llhttp, libyaml, jansson) is never counted. "two - again" is what one more
#    request on an open connection costs; "again - (two - again)" is the connection's own
#    share (accept, TLS handshake, close).
#
#    Why callgrind and not -finstrument-functions: callgrind counts every call in the
#    unmodified binary, attributes each function to its source file from the debug info, and
#    tells the project's files from the libraries' without a tracer; its dumps on request
#    (callgrind_control -d) cut the run into steps without restarting airlock.
#    -fno-inline keeps each project function a call, as the source reads (static inline
#    functions in headers too: their calls are reported on their own line).
#
# Environment: KEEP=dir (copy the callgrind dumps there), WAIT=2 (seconds after each step
# before the dump, for the close to be processed; the idle step lasts as long).
# Prints figures; fails only when something could not be run.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
export AIRLOCK_WORKERS=${AIRLOCK_WORKERS:-1} # one event loop unless asked (the default is one per CPU)
ROOT=$(cd "$HERE/../.." && pwd)
PYS="$HERE/shape.py"
WAIT=${WAIT:-2}

if [ "${1:-}" = --inner ]; then # inside the namespaces: run the steps, print the calls
    shift
    SRC=$1
    . "$ROOT/tests/integration/lib.sh"
    t_enter_netns
    t_start_resolver || exit 1
    t_upstream_ca
    t_upstream_cert "DNS:shape.test" "$T_DIR/up"
    mkdir -p "$T_DIR/www"
    echo "shape" > "$T_DIR/www/index.html"
    chmod -R a+rX "$T_DIR"
    t_start_nginx "
    }
    server {
        listen 127.0.0.2:443 ssl;
        ssl_certificate $T_DIR/up.pem; ssl_certificate_key $T_DIR/up.key;
        server_name shape.test;
        root $T_DIR/www;
" || exit 1
    printf 'domains: ["shape.test"]\n' > "$T_DIR/allow.yaml"
    mkdir -p "$T_DIR/cg"
    : > "$T_DIR/net.log"
    valgrind --tool=callgrind --callgrind-out-file="$T_DIR/cg/cg.out" \
        --vgdb=yes --vgdb-prefix="$T_DIR/vgdb" \
        "$AIRLOCK" run --proxy-ip 127.0.0.1 --upstream-dns 127.0.0.53 \
        --allowlist "$T_DIR/allow.yaml" --log "$T_DIR/net.log" --confdir "$T_DIR/confdir" \
        --listen-dns 127.0.0.1:53 --listen-http 127.0.0.1:80 --listen-https 127.0.0.1:443 \
        --allow-upstream-cidr 127.0.0.2/32 --upstream-ca "$T_DIR/upca.pem" \
        2> "$T_DIR/airlock.err" &
    AIRLOCK_PID=$!
    T_PIDS+=("$AIRLOCK_PID")
    until_ok 'grep -q "ready" "$T_DIR/airlock.err"' 180 ||
        { echo "airlock not ready under callgrind:" >&2; cat "$T_DIR/airlock.err" >&2; exit 1; }
    CA="$T_DIR/confdir/mitmproxy-ca-cert.pem"
    n=0
    dump() { # dump LABEL: callgrind's counters since the last dump, to cg.out.N
        n=$((n + 1))
        callgrind_control --vgdb-prefix="$T_DIR/vgdb" -d "$1" "$AIRLOCK_PID" \
            > "$T_DIR/control.log" 2>&1 ||
            { echo "callgrind_control failed at $1:" >&2; cat "$T_DIR/control.log" >&2; exit 1; }
        until_ok '[ -s "$T_DIR/cg/cg.out.$n" ]' 60 || { echo "no dump $n ($1)" >&2; exit 1; }
        STEP[$n]=$1
    }
    get() { # get EXPECTED HTTP-OPTION URL...: curl through airlock; EXPECTED: each answer's
        # body, status and new connections (one connection for all the URLs)
        local want=$1 out
        shift
        out=$(curl -s -m 60 --cacert "$CA" --resolve shape.test:443:127.0.0.1 \
            -w '%{http_code}:%{num_connects} ' "$@")
        [ "$out" = "$want" ] || { echo "curl $*: got [$out], expected [$want]" >&2; exit 1; }
        sleep "$WAIT"
    }
    declare -a STEP
    U=https://shape.test/index.html
    dump start
    ONE=$(printf 'shape\n200:1 ')
    TWO=$(printf 'shape\n200:1 shape\n200:0 ')
    get "$ONE" --http1.1 "$U" && dump first
    get "$ONE" --http1.1 "$U" && dump again
    get "$TWO" --http1.1 "$U" "$U" && dump two
    get "$ONE" --http2 "$U" && dump h2-again
    get "$TWO" --http2 "$U" "$U" && dump h2-two
    sleep "$WAIT" && dump idle
    # identical lines may be written once with a count (COLLAPSED): one allowed line suffices
    grep -q '^allowed GET https://shape.test/index.html -> 200$' "$T_DIR/net.log" ||
        { echo "no allowed line in the network log:" >&2; cat "$T_DIR/net.log" >&2; exit 1; }
    file() { echo "$T_DIR/cg/cg.out.$1"; }
    echo "== cross-file calls (callgrind, -O0 -g -fno-inline; per step)"
    for i in 2 3 4 5 6 7; do
        python3 "$PYS" calls "$SRC" "$(file $i)" | sed "1s/^calls/${STEP[$i]}/"
    done
    echo "== differences"
    python3 "$PYS" calls-diff "$SRC" "$(file 3)" "$(file 4)" | sed '1s/^difference .*:/two - again (one more HTTP\/1.1 request on the connection):/'
    python3 "$PYS" calls-diff "$SRC" "$(file 5)" "$(file 6)" | sed '1s/^difference .*:/h2-two - h2-again (one more HTTP\/2 request on the connection):/'
    python3 "$PYS" summary "$SRC" "$(file 2)" "$(file 3)" "$(file 4)" "$(file 5)" "$(file 6)" "$(file 7)"
    if [ -n "${KEEP:-}" ]; then
        mkdir -p "$KEEP" && for i in "${!STEP[@]}"; do cp "$(file "$i")" "$KEEP/${STEP[$i]}.cg"; done
    fi
    t_stop_airlock
    exit 0
fi

STATIC=
case "${1:-}" in
    --selftest) exec python3 "$PYS" selftest ;;
    --static) STATIC=1; shift ;;
    -h|--help) sed -n '2,50p' "$0"; exit 0 ;;
esac
SRC=$(cd "${1:-$ROOT}" && pwd -P) || exit 2
echo "source tree: $SRC$( [ -d "$SRC/.git" ] || [ -f "$SRC/.git" ] && echo " ($(git -C "$SRC" log -1 --format='%h %s' | cut -c1-70))")"
python3 "$PYS" sizes "$SRC" 10 || exit 1
python3 "$PYS" flags "$SRC" 10 || exit 1
[ -n "$STATIC" ] && exit 0

for tool in valgrind callgrind_control cmake gcc nginx dnsmasq curl dig openssl unshare; do
    command -v "$tool" > /dev/null || { echo "SKIP calls: $tool is not installed" >&2; exit 77; }
done
[ "$(id -u)" = 0 ] && unshare --net --mount true 2>/dev/null ||
    { echo "SKIP calls: needs root and network namespaces (--static runs the rest)" >&2; exit 77; }
WORK=$(mktemp -d /tmp/airlock-shape.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
echo "== building $SRC with -O0 -g -fno-inline in $WORK/build"
cmake -S "$SRC" -B "$WORK/build" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER=gcc \
    -DCMAKE_C_FLAGS_DEBUG="-O0 -g -fno-inline" \
    -DCMAKE_CXX_FLAGS_DEBUG="-O0 -g -fno-inline" -DAIRLOCK_TESTS=OFF > "$WORK/cmake.log" 2>&1 &&
    cmake --build "$WORK/build" -j2 --target airlock >> "$WORK/cmake.log" 2>&1 ||
    { tail -30 "$WORK/cmake.log" >&2; exit 1; }
export AIRLOCK="$WORK/build/airlock" AIRLOCK_IN_NETNS=1
unshare --net --mount --propagation private bash "$0" --inner "$SRC"
