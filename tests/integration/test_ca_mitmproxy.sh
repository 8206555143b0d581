#!/usr/bin/env bash
# Integration: airlock's ca/ module loads a CA that mitmproxy itself generated (RSA,
# "BEGIN RSA PRIVATE KEY" + certificate), mints leaves with it and `openssl verify`s them
# against mitmproxy-ca-cert.pem. mitmdump runs only long enough to write its confdir; the
# checks are test_ca's test_ca_mitmproxy_confdir, run with AIRLOCK_MITM_CONFDIR set.
# Needs mitmdump (Debian package mitmproxy): without it the test is skipped (exit 77).
# Env: AIRLOCK_BUILD = the build tree holding tests/test_ca (set by CTest).
set -euo pipefail
. "$(dirname "$0")/lib.sh" # the fixed environment (PYTHONUNBUFFERED=1, ...) and t_skip

WAIT_S=60 # for mitmdump to write its CA: ends as soon as it has (about a second)

command -v mitmdump >/dev/null 2>&1 ||
    t_skip package "mitmdump not found (apt-get install mitmproxy): loading a mitmproxy-generated CA is NOT tested"

BUILD=${AIRLOCK_BUILD:-$(cd "$(dirname "$0")/../.." && pwd)/build}
TEST_CA=$(find "$BUILD" -name test_ca -type f -perm -u+x 2>/dev/null | head -n 1)
if [ -z "$TEST_CA" ]; then
    echo "FAIL: no test_ca executable under $BUILD (build the test_ca target)" >&2
    exit 1
fi

TMP=$(mktemp -d /tmp/airlock-ca-mitm.XXXXXX)
MITM_PID=
cleanup() {
    if [ -n "$MITM_PID" ] && kill -0 "$MITM_PID" 2>/dev/null; then
        kill "$MITM_PID" 2>/dev/null || true
        wait "$MITM_PID" 2>/dev/null || true
    fi
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

CONFDIR=$TMP/confdir
# PYTHONUNBUFFERED: its "listening" line must reach the log file when it is printed, not at exit.
HOME=$TMP PYTHONUNBUFFERED=1 mitmdump --set confdir="$CONFDIR" --listen-host 127.0.0.1 \
    --listen-port 0 >"$TMP/mitmdump.log" 2>&1 &
MITM_PID=$!

# mitmproxy writes its files non-atomically; it logs "listening" only after the CA is in place.
ready=0
end=$((SECONDS + WAIT_S))
while [ "$SECONDS" -lt "$end" ]; do
    if grep -qi "listening" "$TMP/mitmdump.log" && [ -s "$CONFDIR/mitmproxy-ca.pem" ] &&
        [ -s "$CONFDIR/mitmproxy-ca-cert.pem" ]; then
        ready=1
        break
    fi
    if ! kill -0 "$MITM_PID" 2>/dev/null; then
        break
    fi
    sleep 0.1
done
kill "$MITM_PID" 2>/dev/null || true
wait "$MITM_PID" 2>/dev/null || true
MITM_PID=

if [ "$ready" != 1 ]; then
    echo "FAIL: mitmdump did not write its CA within $WAIT_S s; its log:" >&2
    cat "$TMP/mitmdump.log" >&2
    exit 1
fi
echo "mitmdump $(mitmdump --version 2>/dev/null | head -n 1 | awk '{print $2}') wrote:"
ls -l "$CONFDIR"
head -n 1 "$CONFDIR/mitmproxy-ca.pem"

out=$(AIRLOCK_MITM_CONFDIR="$CONFDIR" "$TEST_CA" 2>&1) || {
    echo "$out"
    echo "FAIL: test_ca failed with the mitmproxy confdir" >&2
    exit 1
}
echo "$out"
if ! grep -q "OK \] test_ca_mitmproxy_confdir" <<<"$out"; then
    echo "FAIL: test_ca_mitmproxy_confdir did not run" >&2
    exit 1
fi
echo "PASS: airlock loads mitmproxy's CA and its leaves verify against mitmproxy-ca-cert.pem"
