# Shared helpers for the integration tests (sourced by test_*.sh; bash).
#
# Every test runs in network and mount namespaces of its own (`unshare --net --mount`), so it
# may bind ports 53/80/443 on its private loopback and point /etc/resolv.conf at airlock
# without touching the machine. Upstreams live on 127.0.0.2 (nginx, Python), the test
# resolver for *.test on 127.0.0.53 (dnsmasq), airlock on 127.0.0.1. Everything started is
# stopped by the EXIT trap.
#
# Outcomes: a check passes (t_ok), fails (t_fail) or is not made (t_not_made, with the reason:
# never counted as a pass). A whole test may skip (t_skip, exit 77) only when the machine lacks
# a capability; tests/run-all.sh probes the capabilities itself and fails the run when a test
# skipped although the capability is there. Nothing waits a fixed time for an event: wait for
# it (t_wait_log, t_wait_port, until_ok) with a generous deadline.
set -u

# A fixed environment: nothing may depend on the caller's (issue 14). HOME is a fresh
# directory per test (set by t_enter_netns); Python flushes every line, so a log file shows
# what a Python program printed when it printed it.
umask 022
export LC_ALL=C.UTF-8 LANG=C.UTF-8 TZ=UTC PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
export PATH=$PATH:/usr/local/sbin:/usr/sbin:/sbin
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY no_proxy NO_PROXY \
    CURL_CA_BUNDLE SSL_CERT_FILE SSL_CERT_DIR REQUESTS_CA_BUNDLE NODE_EXTRA_CA_CERTS \
    NODE_OPTIONS PYTHONPATH LANGUAGE

: "${AIRLOCK:?AIRLOCK must name the airlock binary}"
: "${AIRLOCK_SRC:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
PY=/usr/bin/python3
T_FAILS=0
T_PASSES=0
T_NOT_MADE=0
T_PIDS=()

# Re-executes the calling script inside fresh namespaces (once).
t_enter_netns() {
    if [ -z "${AIRLOCK_IN_NETNS:-}" ]; then
        if ! unshare --net --mount true 2>/dev/null; then
            t_skip netns "cannot create network and mount namespaces here (needs root and unshare)"
        fi
        export AIRLOCK_IN_NETNS=1
        exec unshare --net --mount --propagation private bash "$0" "$@"
    fi
    ip link set lo up
    ip addr add 127.0.0.2/8 dev lo 2>/dev/null || true
    T_DIR=$(mktemp -d /tmp/airlock-test.XXXXXX)
    chmod 755 "$T_DIR"
    export HOME=$T_DIR/home
    mkdir -p "$HOME"
    trap t_cleanup EXIT
    printf 'nameserver 127.0.0.1\noptions timeout:2 attempts:1\n' > "$T_DIR/resolv.conf"
    mount --bind "$T_DIR/resolv.conf" /etc/resolv.conf
}

t_cleanup() {
    local p
    for p in "${T_PIDS[@]}"; do
        kill "$p" 2>/dev/null
    done
    for p in "${T_PIDS[@]}"; do
        wait "$p" 2>/dev/null
    done
    [ -f "$T_DIR/nginx.pid" ] && kill "$(cat "$T_DIR/nginx.pid")" 2>/dev/null
    # a sanitizer report from airlock is the one thing a failed CI run must not lose
    if grep -qE 'ERROR: (Address|Leak|Undefined)Sanitizer|runtime error:' "$T_DIR"/airlock*.err 2>/dev/null; then
        echo "--- sanitizer report from airlock:"
        grep -hE -A60 'ERROR: (Address|Leak|Undefined)Sanitizer|runtime error:' "$T_DIR"/airlock*.err | head -120
    fi
    if [ -n "${KEEP_TEST_DIR:-}" ]; then echo "kept $T_DIR"; else rm -rf "$T_DIR"; fi
}

# t_skip CAPABILITY "reason": the machine cannot run this test; exit 77. CAPABILITY names
# what is lacking: netns (network namespaces), podman (a container runtime that starts
# containers), root, or package (a program the suite needs is not installed; under CI
# `.ci/install-deps test` installs every one, so such a skip always fails the run).
t_skip() {
    echo "SKIP ($1): $(basename "$0" .sh): $2"
    exit 77
}

t_ok() { T_PASSES=$((T_PASSES + 1)); echo "ok - $*"; }
t_fail() { T_FAILS=$((T_FAILS + 1)); echo "FAIL - $*"; }
# t_not_made "check" ["why"]: a check this run could not make; reported, never a pass.
t_not_made() {
    T_NOT_MADE=$((T_NOT_MADE + 1))
    echo "NOT MADE - $1${2:+ ($2)}"
}
t_check() { # t_check "description" command...
    local d=$1; shift
    if "$@"; then t_ok "$d"; else t_fail "$d"; fi
}
t_eq() { # t_eq "description" expected actual
    if [ "$2" = "$3" ]; then t_ok "$1"; else t_fail "$1: expected [$2] got [$3]"; fi
}
# until_ok 'EXPR' [SECONDS]: waits (default up to 20 s) until the shell expression succeeds;
# EXPR is evaluated anew each time, so quote it in single quotes.
until_ok() {
    local end=$((SECONDS + ${2:-20}))
    while :; do
        eval "$1" && return 0
        [ "$SECONDS" -lt "$end" ] || return 1
        sleep 0.05
    done
}
# t_wait_log 'BRE' [grep flags]: waits up to 20 s until a line of the network log matches
# (grep -q FLAGS -- BRE; pass -E or -xF for other kinds of pattern). airlock writes a
# request's line when its exchange ends, from a writer thread, so a client can have its
# answer a moment before the line is in the file. The deadline is only for a line that never
# comes: a line that does come ends the wait at once.
t_wait_log() {
    local tw_pattern=$1 tw_flags=${2:-}
    # shellcheck disable=SC2016 # expanded by until_ok's eval; $tw_flags: grep flags, as words
    until_ok 'grep -q $tw_flags -- "$tw_pattern" "$T_DIR/net.log" 2>/dev/null' 20
}
t_logged() { # t_logged "description" 'BRE a network log line must match' [grep flags]
    if t_wait_log "$2" "${3:-}"; then t_ok "$1"; else
        t_fail "$1: no line /$2/ (last: $(tail -1 "$T_DIR/net.log" 2>/dev/null))"; fi
}
t_contains() { # t_contains "description" haystack needle
    case "$2" in *"$3"*) t_ok "$1" ;; *) t_fail "$1: [$3] not in [$2]" ;; esac
}
t_done() {
    echo "$T_PASSES passed, $T_FAILS failed, $T_NOT_MADE not made"
    [ "$T_FAILS" -eq 0 ]
}

# Waits until a TCP port answers (host port [seconds, default 20]).
t_wait_port() {
    local i
    for i in $(seq 1 $((${3:-20} * 20))); do
        if (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; then return 0; fi
        sleep 0.05
    done
    echo "port $1:$2 never opened" >&2
    return 1
}

# A resolver for *.test on 127.0.0.53: every *.test name -> 127.0.0.2; extra args are
# passed to dnsmasq (e.g. --address=/down.test/ for NXDOMAIN). Tried twice; when it still does
# not answer, the test stops here (exit 1, its cleanup runs) rather than failing later on every
# lookup with "Could not contact DNS server".
t_start_resolver() {
    local pid
    for _ in 1 2; do
        dnsmasq --keep-in-foreground --no-resolv --no-hosts --conf-file=/dev/null \
            --listen-address=127.0.0.53 --bind-interfaces --port=53 \
            --address=/test/127.0.0.2 --log-facility=- -q "$@" > "$T_DIR/dnsmasq.log" 2>&1 &
        pid=$!
        T_PIDS+=($pid)
        t_wait_udp53 127.0.0.53 && return 0
        kill "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
    done
    echo "the test's resolver (dnsmasq on 127.0.0.53) never answered: stopping" >&2
    exit 1
}

t_wait_udp53() {
    local i
    for i in $(seq 1 400); do
        if dig +short +time=1 +tries=1 @"$1" probe.test A >/dev/null 2>&1; then return 0; fi
        sleep 0.05
    done
    echo "resolver on $1 not answering" >&2
    [ -s "$T_DIR/dnsmasq.log" ] && sed 's/^/  dnsmasq: /' "$T_DIR/dnsmasq.log" >&2
    return 1
}

# nginx on 127.0.0.2:80 serving $T_DIR/www; extra server config in $1 (optional).
t_start_nginx() {
    mkdir -p "$T_DIR/www" "$T_DIR/nginx"
    cat > "$T_DIR/nginx.conf" <<NGINX
worker_processes 1;
worker_rlimit_nofile 8192;
pid $T_DIR/nginx.pid;
error_log $T_DIR/nginx/error.log;
events { worker_connections 4096; }
http {
    access_log $T_DIR/nginx/access.log;
    client_body_temp_path $T_DIR/nginx/body;
    proxy_temp_path $T_DIR/nginx/proxy;
    fastcgi_temp_path $T_DIR/nginx/fastcgi;
    uwsgi_temp_path $T_DIR/nginx/uwsgi;
    scgi_temp_path $T_DIR/nginx/scgi;
    keepalive_requests 100000;
    server {
        listen 127.0.0.2:80;
        root $T_DIR/www;
        location /echo { return 200 "method=\$request_method uri=\$request_uri host=\$host\n"; }
        ${1:-}
    }
}
NGINX
    nginx -c "$T_DIR/nginx.conf" -g 'daemon on;' || return 1
    t_wait_port 127.0.0.2 80
}

# airlock on 127.0.0.1 (:53 DNS, :80 HTTP, :443 HTTPS) with the allowlist file $1; further
# args go to `airlock run`. The log is $T_DIR/net.log, stderr $T_DIR/airlock.err.
t_start_airlock() {
    local allow=$1; shift
    : > "$T_DIR/net.log"
    # emptied here, not by the background redirect: a restart could otherwise read the previous
    # process's "ready" before the new one opened the file
    : > "$T_DIR/airlock.err"
    "$AIRLOCK" run --proxy-ip 127.0.0.1 --upstream-dns 127.0.0.53 \
        --allowlist "$allow" --log "$T_DIR/net.log" --confdir "$T_DIR/confdir" \
        --listen-dns 127.0.0.1:53 --listen-http 127.0.0.1:80 --listen-https 127.0.0.1:443 \
        --allow-upstream-cidr 127.0.0.2/32 "$@" 2> "$T_DIR/airlock.err" &
    AIRLOCK_PID=$!
    T_PIDS+=($AIRLOCK_PID)
    local i
    for i in $(seq 1 $((${T_READY_S:-20} * 20))); do # T_READY_S: seconds to wait for "ready"
        if grep -q "ready" "$T_DIR/airlock.err" 2>/dev/null; then return 0; fi
        if ! kill -0 "$AIRLOCK_PID" 2>/dev/null; then
            echo "airlock exited:" >&2; cat "$T_DIR/airlock.err" >&2; return 1
        fi
        sleep 0.05
    done
    echo "airlock not ready:" >&2; cat "$T_DIR/airlock.err" >&2
    return 1
}

# t_reload: SIGHUP to airlock, then waits for its answer on stderr ("allowlist reloaded" or
# why the file was refused); fails after 20 s without one.
t_reload() {
    local n
    n=$(wc -l < "$T_DIR/airlock.err")
    kill -HUP "$AIRLOCK_PID"
    # shellcheck disable=SC2016 # expanded by until_ok's eval
    until_ok '[ "$(wc -l < "$T_DIR/airlock.err")" -gt "$n" ]' ||
        { echo "airlock said nothing on SIGHUP" >&2; return 1; }
}

# t_overlay_var: /var/lib and /var/cache as overlays whose writes land in the test's directory,
# in this mount namespace only (Podman writes its blob-info cache to /var/lib/containers/cache
# as root, whatever storage.conf says, and its short-name alias lock to /var/cache/containers).
# The test's cleanup runs `umount -l /var/lib /var/cache` before its own directory's mounts.
t_overlay_var() {
    local d
    mkdir -p "$T_DIR/varov" && mount -t tmpfs -o mode=0755 tmpfs "$T_DIR/varov" || return 1
    for d in lib cache; do
        mkdir -p "$T_DIR/varov/$d/up" "$T_DIR/varov/$d/work" &&
            mount -t overlay overlay \
                -o "lowerdir=/var/$d,upperdir=$T_DIR/varov/$d/up,workdir=$T_DIR/varov/$d/work" \
                "/var/$d" || return 1
    done
}

# A private podman inside the test's namespaces: tmpfs over /run/netns, /run/runc and
# /run/containers, and a containers.conf and storage.conf under DIR/podman (runc, cgroupfs, no
# default ulimits: what podman needs on this kind of machine; images, containers, networks
# and events kept in DIR), exported as CONTAINERS_CONF and CONTAINERS_STORAGE_CONF. Says
# which mount failed and returns 1.
t_private_podman() { # t_private_podman DIR
    local d p=$1/podman
    for d in /run/netns /run/runc /run/containers; do
        if ! { mkdir -p "$d" && mount -t tmpfs -o mode=0755 tmpfs "$d"; }; then
            echo "cannot mount a private $d"
            return 1
        fi
    done
    mkdir -p "$p/networks" "$p/tmp" || return 1
    cat > "$p/containers.conf" <<EOF
[containers]
default_ulimits = []
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "$p/events.log"
tmp_dir = "$p/tmp"
[network]
network_config_dir = "$p/networks"
EOF
    cat > "$p/storage.conf" <<EOF
[storage]
driver = "overlay"
graphroot = "$p/root"
runroot = "$p/runroot"
EOF
    export CONTAINERS_CONF=$p/containers.conf CONTAINERS_STORAGE_CONF=$p/storage.conf
}

# Removes every container, network (but podman's default) and image of the private podman.
t_podman_clear() {
    podman rm -af -t 0 >/dev/null 2>&1
    podman network ls --format '{{.Name}}' 2>/dev/null | grep -v '^podman$' |
        xargs -r podman network rm -f >/dev/null 2>&1
    podman rmi -af >/dev/null 2>&1
}

t_stop_airlock() {
    kill -TERM "$AIRLOCK_PID" 2>/dev/null
    wait "$AIRLOCK_PID" 2>/dev/null
    local rc=$?
    return $rc
}

# Resident set size of a pid in KiB.
t_rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
t_fds() { ls "/proc/$1/fd" | wc -l; }

# A test CA for upstream servers ($T_DIR/upca.pem) and a server certificate for the names
# given (ECDSA P-256): t_upstream_cert NAME FILE-PREFIX [CA-PREFIX]. With CA-PREFIX "self"
# the certificate is self-signed (an untrusted upstream).
t_upstream_ca() {
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
        -subj "/CN=airlock test upstream CA" -keyout "$T_DIR/upca.key" -out "$T_DIR/upca.pem" \
        -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign \
        >/dev/null 2>&1
}
t_upstream_cert() { # t_upstream_cert "DNS:a.test,DNS:b.test" prefix [self]
    local san=$1 out=$2
    if [ "${3:-}" = self ]; then
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
            -subj "/CN=self" -addext "subjectAltName=$san" -keyout "$out.key" -out "$out.pem" \
            >/dev/null 2>&1
        return
    fi
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=upstream" \
        -keyout "$out.key" -out "$out.csr" >/dev/null 2>&1
    printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth\n' "$san" > "$out.ext"
    openssl x509 -req -in "$out.csr" -CA "$T_DIR/upca.pem" -CAkey "$T_DIR/upca.key" \
        -CAcreateserial -days 30 -extfile "$out.ext" -out "$out.pem" >/dev/null 2>&1
}
