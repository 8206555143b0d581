#!/bin/bash
# Issue 34: large bodies through the socket paths that skip copies (net/px_sock.c, px_tlsbio.c):
# TLS records sealed straight from the caller's buffer, ciphertext read by OpenSSL from the loop's
# read buffer with partial records kept, plain writes of 64 KiB or more handed to the kernel from
# the caller's buffer. Random bodies over HTTP and HTTPS (TLS 1.3 and 1.2 toward the client), read
# at full speed and slowly (the socket's queue fills, libuv keeps the rest), over HTTP/2 (with
# brk calls counted), and uploaded: every byte arrives, in order (sha256).
. "$(dirname "$0")/lib.sh"
command -v strace > /dev/null || t_skip strace "strace is not installed"
t_enter_netns "$@"
HERE=$(cd "$(dirname "$0")" && pwd)
printf 'domains: ["nginx.test", "py.test"]\n' > "$T_DIR/allow.yaml"
ip addr add 127.0.0.3/8 dev lo 2>/dev/null || true
t_start_resolver --address=/py.test/127.0.0.3 || exit 1
t_upstream_ca
t_upstream_cert "DNS:nginx.test" "$T_DIR/up"
t_start_nginx "listen 127.0.0.2:443 ssl; ssl_certificate $T_DIR/up.pem; ssl_certificate_key $T_DIR/up.key;" || exit 1
t_wait_port 127.0.0.2 443 || exit 1
head -c 25000000 /dev/urandom > "$T_DIR/www/big.bin"
head -c 4000000 /dev/urandom > "$T_DIR/www/mid.bin"
"$PY" "$HERE/upstream.py" 127.0.0.3 80 "$T_DIR/py-conns.log" > /dev/null 2>&1 &
T_PIDS+=($!)
t_wait_port 127.0.0.3 80 || exit 1
t_start_airlock "$T_DIR/allow.yaml" --upstream-ca "$T_DIR/upca.pem" \
    --allow-upstream-cidr 127.0.0.3/32 || exit 1
CA="$T_DIR/confdir/mitmproxy-ca-cert.pem"
sum() { sha256sum | cut -d' ' -f1; }
fetch() { # fetch URL [curl args]: the body's sha256
    curl -s --http1.1 -m 60 --resolve nginx.test:443:127.0.0.1 --resolve nginx.test:80:127.0.0.1 \
        --cacert "$CA" "${@:2}" "$1" | sum
}
big=$(sum < "$T_DIR/www/big.bin")
mid=$(sum < "$T_DIR/www/mid.bin")

t_eq "25 MB over HTTP arrives whole" "$big" "$(fetch http://nginx.test/big.bin)"
t_eq "25 MB over HTTPS (TLS 1.3) arrives whole" "$big" "$(fetch https://nginx.test/big.bin --tlsv1.3)"
t_eq "25 MB over HTTPS (TLS 1.2) arrives whole" "$big" \
    "$(fetch https://nginx.test/big.bin --tlsv1.2 --tls-max 1.2)"
t_eq "4 MB over HTTP read slowly arrives whole" "$mid" \
    "$(fetch http://nginx.test/mid.bin --limit-rate 4M)"
t_eq "4 MB over HTTPS read slowly arrives whole" "$mid" \
    "$(fetch https://nginx.test/mid.bin --limit-rate 4M)"
# two downloads on one keep-alive connection: the second starts where the first one's last
# records and a partial record may still sit in airlock's buffers
out=$(curl -s --http1.1 -m 60 --resolve nginx.test:443:127.0.0.1 --cacert "$CA" \
    https://nginx.test/mid.bin -o "$T_DIR/a.out" https://nginx.test/big.bin -o "$T_DIR/b.out" \
    -w '%{num_connects}\n' | tr '\n' ' ')
t_eq "two HTTPS downloads on one connection" "1 0 " "$out"
t_eq "... the first whole" "$mid" "$(sum < "$T_DIR/a.out")"
t_eq "... the second whole" "$big" "$(sum < "$T_DIR/b.out")"

# HTTP/2 toward the client, with brk counted by strace on airlock's loop thread: the heap's top
# stays while the download runs (glibc keeps PX_HEAP_TOP_KEEP free at the top; it gave the top
# back past 128 KiB and took it again, up to a brk pair per turn, whenever a freed buffer sat at
# the top). The fewer upstream pauses of a fast HTTP/2 stream (proxy/px_h2srv.c down_full) depend
# on timing that strace changes: tests/bench/conn_count.sh counts them (epoll_ctl per MiB).
t_eq "25 MB over HTTP/2 arrives whole" "$big" "$(fetch https://nginx.test/big.bin --http2)"
strace -q -p "$AIRLOCK_PID" -e trace=brk -o "$T_DIR/strace-h2.txt" 2> /dev/null &
ST=$!
T_PIDS+=($ST)
sleep 1 # strace attaches
t_eq "... again, counted" "$big" "$(fetch https://nginx.test/big.bin --http2)"
sleep 0.3
kill -INT "$ST"; wait "$ST" 2> /dev/null
brks=$(grep -c '^brk(' "$T_DIR/strace-h2.txt")
t_check "... the heap's top is not given back and taken again ($brks brk, at most 4)" \
    test "$brks" -le 4

head -c 25000000 /dev/urandom > "$T_DIR/up.bin"
want="$(stat -c %s "$T_DIR/up.bin") $(sha256sum "$T_DIR/up.bin" | cut -d' ' -f1)"
out=$(curl -s -m 60 --data-binary @"$T_DIR/up.bin" http://py.test/upload)
t_eq "25 MB upload over HTTP arrives whole" "$want" "$out"
kill -0 "$AIRLOCK_PID"
t_check "airlock still runs" test $? -eq 0
t_done
