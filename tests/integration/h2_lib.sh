# shellcheck shell=bash
# Helpers shared by the HTTP/2 tests (test_h2*.sh; sourced after lib.sh and t_enter_netns).
#
# Upstreams: one nginx serving ok.test on 127.0.0.3 and evil.test on 127.0.0.4, :80 plain and
# :443 TLS with h2 and http/1.1 offered (certificate from the test CA), one access log per
# address ($T_DIR/ok.access, $T_DIR/evil.access: "proto method uri status" per request), so a
# test can count what reached each upstream. The resolver sends ok.test and evil.test there.

# h2_setup_upstreams: the addresses, the test CA and certificate, nginx, the resolver.
h2_setup_upstreams() {
    ip addr add 127.0.0.3/8 dev lo 2>/dev/null || true
    ip addr add 127.0.0.4/8 dev lo 2>/dev/null || true
    t_upstream_ca
    t_upstream_cert "DNS:ok.test,DNS:evil.test,DNS:*.ok.test" "$T_DIR/up"
    mkdir -p "$T_DIR/www/api" "$T_DIR/nginx"
    printf 'small\n' > "$T_DIR/www/api/small"
    head -c $((256 * 1024)) /dev/zero | tr '\0' m > "$T_DIR/www/api/mid"
    head -c $((8 * 1024 * 1024)) /dev/zero | tr '\0' b > "$T_DIR/www/api/big"
    local srv="" side addr
    for side in ok:127.0.0.3 evil:127.0.0.4; do
        addr=${side#*:}
        srv="$srv
    server {
        listen $addr:80;
        listen $addr:443 ssl http2;
        ssl_certificate $T_DIR/up.pem;
        ssl_certificate_key $T_DIR/up.key;
        access_log $T_DIR/${side%%:*}.access h2t;
        root $T_DIR/www;
        location /api/echo {
            return 200 \"proto=\$server_protocol method=\$request_method uri=\$request_uri host=\$host x-cred=\$http_x_cred\\n\";
        }
        location /api/ { }
        location / { return 200 \"upstream ${side%%:*} \$uri\\n\"; }
    }"
    done
    cat > "$T_DIR/nginx.conf" <<NGINX
worker_processes 1;
worker_rlimit_nofile 8192;
pid $T_DIR/nginx.pid;
error_log $T_DIR/nginx/error.log;
events { worker_connections 4096; }
http {
    log_format h2t '\$server_protocol \$request_method \$request_uri \$status';
    client_body_temp_path $T_DIR/nginx/body;
    proxy_temp_path $T_DIR/nginx/proxy;
    fastcgi_temp_path $T_DIR/nginx/fastcgi;
    uwsgi_temp_path $T_DIR/nginx/uwsgi;
    scgi_temp_path $T_DIR/nginx/scgi;
    keepalive_requests 100000;
    http2_max_concurrent_streams 256;
    $srv
}
NGINX
    nginx -c "$T_DIR/nginx.conf" -g 'daemon on;' || return 1
    t_wait_port 127.0.0.3 443 && t_wait_port 127.0.0.4 443 || return 1
    # the port probes are not requests: nothing is in the access logs yet
    : > "$T_DIR/ok.access"
    : > "$T_DIR/evil.access"
    t_start_resolver --address=/ok.test/127.0.0.3 --address=/evil.test/127.0.0.4
}

# h2_count SIDE ['ERE']: requests in SIDE's access log (ok or evil), matching ERE if given.
h2_count() {
    grep -cE -- "${2:-.}" "$T_DIR/$1.access" 2>/dev/null || true
}

# h2_rss_bounded "what" BEFORE_KB AFTER_KB [MAX_GROWTH_KB, default 32 MiB]: a check, with the
# figure printed.
h2_rss_bounded() {
    local max=${4:-32768} grow=$(($3 - $2))
    if [ "$grow" -le "$max" ]; then
        t_ok "$1: airlock's RSS grew by $grow KiB ($2 -> $3 KiB; bound $max KiB)"
    else
        t_fail "$1: airlock's RSS grew by $grow KiB ($2 -> $3 KiB), over the bound $max KiB"
    fi
}
