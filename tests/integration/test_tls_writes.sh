#!/bin/bash
# Issue 34: a new TLS 1.3 connection costs airlock two writes toward the client for a one-request
# exchange (its handshake flight, then the response): the session tickets OpenSSL makes at the end of the handshake wait inside TLS and
# leave with the response (net/px_sock.c), instead of a write (and a segment) of their own.
# Counted with strace on airlock's loop thread over curl connections (TLS 1.3, HTTP/1.1,
# Connection: close) to an HTTPS nginx; the clients still get their tickets (curl resumes with
# one). TLS 1.2 keeps its server Finished immediate: that handshake is checked to complete.
. "$(dirname "$0")/lib.sh"
command -v strace > /dev/null || t_skip strace "strace is not installed"
t_enter_netns "$@"
printf 'domains: ["nginx.test"]\n' > "$T_DIR/allow.yaml"
t_start_resolver || exit 1
t_upstream_ca
t_upstream_cert "DNS:nginx.test" "$T_DIR/up"
echo "hello over tls" > "$T_DIR/index.html"
t_start_nginx "listen 127.0.0.2:443 ssl; ssl_certificate $T_DIR/up.pem; ssl_certificate_key $T_DIR/up.key;" || exit 1
cp "$T_DIR/index.html" "$T_DIR/www/index.html"
t_wait_port 127.0.0.2 443 || exit 1
# one loop: strace follows the loop thread that accepts every connection
t_start_airlock "$T_DIR/allow.yaml" --workers 1 --upstream-ca "$T_DIR/upca.pem" || exit 1
CA="$T_DIR/confdir/mitmproxy-ca-cert.pem"
get() { # get [curl args]: one connection, one GET, Connection: close
    curl -s --http1.1 --resolve nginx.test:443:127.0.0.1 --cacert "$CA" -H 'Connection: close' \
        "$@" https://nginx.test/index.html
}
# the leaf is minted and an upstream connection pooled before counting
t_eq "a GET through airlock (TLS 1.3)" "hello over tls" "$(get --tlsv1.3)"

N=10
strace -q -p "$AIRLOCK_PID" -e trace=accept4,write,writev,sendto,sendmsg,close \
    -o "$T_DIR/strace.txt" 2> "$T_DIR/strace.err" &
ST=$!
T_PIDS+=($ST)
sleep 1 # strace attaches
ok=0
for i in $(seq 1 $N); do
    [ "$(get --tlsv1.3)" = "hello over tls" ] && ok=$((ok + 1))
done
sleep 0.5
kill -INT "$ST"; wait "$ST" 2> /dev/null
t_eq "$N GETs over new TLS 1.3 connections answered" "$N" "$ok"
# writes on accepted sockets only (the upstream leg and the log thread are not counted)
writes=$(awk '
    /^accept4\(/ { split($0, a, "= "); fd = a[2] + 0; if (fd > 0) cl[fd] = 1 }
    /^(write|writev|sendto|sendmsg)\(/ { fd = substr($0, index($0, "(") + 1) + 0; if (fd in cl) n++ }
    /^close\(/ { fd = substr($0, index($0, "(") + 1) + 0; delete cl[fd] }
    END { print n + 0 }' "$T_DIR/strace.txt")
accepts=$(grep -c '^accept4(.*= [0-9]' "$T_DIR/strace.txt")
t_eq "connections accepted while counting" "$N" "$accepts"
t_eq "writes toward the client over $N new TLS 1.3 connections: 2 each (tickets ride with the response; they cost a third before)" \
    "$((2 * N))" "$writes"

# the tickets still reach the client: curl saves one and resumes with it
sess=$(printf 'GET /index.html HTTP/1.1\r\nHost: nginx.test\r\nConnection: close\r\n\r\n' |
    timeout 10 openssl s_client -quiet -connect 127.0.0.1:443 -servername nginx.test \
        -CAfile "$CA" -tls1_3 -sess_out "$T_DIR/sess.pem" 2> /dev/null | tail -1)
t_eq "openssl s_client gets the answer" "hello over tls" "$sess"
t_check "... and a session ticket with it" test -s "$T_DIR/sess.pem"
resumed=$(printf 'GET /index.html HTTP/1.1\r\nHost: nginx.test\r\nConnection: close\r\n\r\n' |
    timeout 10 openssl s_client -connect 127.0.0.1:443 -servername nginx.test \
        -CAfile "$CA" -tls1_3 -sess_in "$T_DIR/sess.pem" 2> /dev/null | grep -c '^Reused, TLSv1.3')
t_eq "the ticket resumes a TLS 1.3 session with airlock" 1 "$resumed"
t_eq "a GET over TLS 1.2 (the server's Finished is not held)" "hello over tls" \
    "$(get --tlsv1.2 --tls-max 1.2)"
t_done
