#!/bin/bash
# Per-connection and bulk counts (issue 34): airlock, nginx and HAProxy side by side, set up
# as http_bench.sh sets them up (same namespace, upstream, configs and CPU placement), and
# measured by counts that a loaded, shared box does not disturb much: system calls (by name)
# and CPU time per new TLS connection; system calls, epoll wake-ups, bytes per read, socket
# buffer sizes and CPU per GiB of a download over HTTP and HTTPS; RSS per idle HTTP/1.1
# connection (one GET each, and after a burst) and per idle HTTP/2 connection.
#
#   tests/bench/conn_count.sh          (see tests/bench/README.md, issue 34)
#
# Environment: as http_bench.sh: RUNS=3, DURATION=10, CONNS=50, BIG_MB=1024, IDLE_CONNS=300,
# PROFILE=1 (perf record of airlock during one new-connection run), COUNTS="new big idle" (the
# parts to run), AIRLOCK=binary, OUT=dir.
# Prints figures; never fails on one.
HERE=$(cd "$(dirname "$0")" && pwd)
export IDLE_CONNS=${IDLE_CONNS:-300} NGINX_H2=1 NO_MITM=1
exec "$HERE/http_bench.sh" counts "$@"
