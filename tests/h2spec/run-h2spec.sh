#!/bin/bash
# HTTP/2 conformance of airlock's client side with h2spec (github.com/summerwind/h2spec):
# builds h2spec from a checkout of its source with Debian's Go packages (no module download),
# then runs it, in a network namespace of its own as the integration tests do, against
# airlock's TLS listener for an allowed host (ok.test, nginx behind it), trusting airlock's CA,
# and prints the failing cases. The last local result and the cause of each failure are in
# tests/h2spec/README.md.
#
#   H2SPEC_SRC=/path/to/h2spec-checkout [AIRLOCK=build/airlock] tests/h2spec/run-h2spec.sh [h2spec args]
#
# H2SPEC_SRC: a checkout of h2spec (CI has no network beyond the package mirrors, so it has
# none: the script says so and exits 77). H2SPEC_OUT: where the binary is built
# (/tmp/airlock-h2spec). Extra args go to h2spec (e.g. a section: "http2/6.5"; -S: strict).
# The Go packages it builds with: .ci/packages/test-h2spec.
set -u
SRC_DIR=$(cd "$(dirname "$0")/../.." && pwd)
: "${AIRLOCK:=$SRC_DIR/build/airlock}"
export AIRLOCK
OUT=${H2SPEC_OUT:-/tmp/airlock-h2spec}

if [ -z "${AIRLOCK_IN_NETNS:-}" ]; then
    if [ -z "${H2SPEC_SRC:-}" ] || [ ! -f "${H2SPEC_SRC}/cmd/h2spec/h2spec.go" ]; then
        echo "h2spec: no source (set H2SPEC_SRC to a checkout of github.com/summerwind/h2spec)."
        echo "CI cannot fetch it (no network beyond the package mirrors); the result of the last"
        echo "local run is in tests/h2spec/README.md."
        exit 77
    fi
    command -v go > /dev/null || { echo "h2spec: go is not installed (golang-go)"; exit 77; }
    for d in github.com/spf13/cobra github.com/fatih/color golang.org/x/net/http2; do
        if [ ! -d "/usr/share/gocode/src/$d" ]; then
            echo "h2spec: /usr/share/gocode/src/$d is missing: install .ci/packages/test-h2spec"
            exit 77
        fi
    done
    # GOPATH mode: the checkout under $OUT/gopath, every dependency from /usr/share/gocode
    mkdir -p "$OUT/gopath/src/github.com/summerwind"
    ln -sfn "$(cd "$H2SPEC_SRC" && pwd)" "$OUT/gopath/src/github.com/summerwind/h2spec"
    if ! (cd "$OUT/gopath/src/github.com/summerwind/h2spec" &&
        GO111MODULE=off GOFLAGS='' GOPATH="$OUT/gopath:/usr/share/gocode" GOCACHE="$OUT/gocache" \
            go build -o "$OUT/h2spec" ./cmd/h2spec); then
        echo "h2spec: the build failed"
        exit 1
    fi
    echo "h2spec built: $OUT/h2spec ($(cd "$H2SPEC_SRC" && git log -1 --format='%h %cs' 2>/dev/null))"
fi

. "$SRC_DIR/tests/integration/lib.sh"
t_enter_netns "$@"
. "$SRC_DIR/tests/integration/h2_lib.sh"
printf 'domains: ["ok.test"]\n' > "$T_DIR/allow.yaml"
h2_setup_upstreams || exit 1
t_start_airlock "$T_DIR/allow.yaml" --upstream-ca "$T_DIR/upca.pem" \
    --allow-upstream-cidr 127.0.0.3/32 || exit 1
# Go reads SSL_CERT_FILE: h2spec verifies airlock's certificate for ok.test (no -k)
SSL_CERT_FILE="$T_DIR/confdir/mitmproxy-ca-cert.pem" "$OUT/h2spec" -h ok.test -p 443 -t \
    -o 3 -j "$T_DIR/h2spec.xml" "$@" > "$T_DIR/h2spec.out" 2>&1
rc=$?
# each failing case with what h2spec expected and got (H2SPEC_ALL=1: the whole output)
if [ -n "${H2SPEC_ALL:-}" ]; then cat "$T_DIR/h2spec.out"; else sed -n '/^Failures:/,$p' "$T_DIR/h2spec.out"; fi
tail -1 "$T_DIR/h2spec.out"
if ! kill -0 "$AIRLOCK_PID" 2>/dev/null; then
    echo "airlock died during the run"
    rc=1
fi
exit $rc
