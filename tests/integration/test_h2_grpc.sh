#!/bin/bash
# gRPC end to end through airlock (issue 16), with python3-grpcio (h2_grpc.py: generic
# handlers, byte serializers, no protoc): the client trusts airlock's CA and calls grpc.test
# by name as an agent would; the server is upstream, TLS with the test CA, h2 only (as every
# gRPC server), so every allowed call needs both legs of HTTP/2.
#  - unary, server streaming, client streaming, bidirectional;
#  - a handler that aborts: the client gets the status, its details and the trailing metadata
#    (grpc-status and friends travel in trailers);
#  - a bidirectional stream held open: H2_HOLD_SECS seconds, a message every 5 s (20 s by
#    default; LONG=1 holds it 180 s, beyond the common 2-minute idle timeouts);
#  - metadata carrying a surrogate credential is replaced in scope (grpc.test: the server
#    says it got the real value) and sent unchanged out of scope (grpc2.test, same server);
#  - a method the allowlist does not allow: airlock's 403 on that stream, which gRPC clients
#    read as PERMISSION_DENIED.
#
# Addresses in the test's own namespace: airlock 127.0.0.1; the gRPC server on 127.0.0.5:443
# (grpc.test and grpc2.test).
. "$(dirname "$0")/lib.sh"
t_enter_netns "$@"
HERE=$(cd "$(dirname "$0")" && pwd)
"$PY" -c 'import grpc' 2> /dev/null || t_skip package "python3-grpcio is not installed"
HOLD=${H2_HOLD_SECS:-20}
[ -n "${LONG:-}" ] && HOLD=180

REAL="real-grpc-cred-0123456789"
SURR="surrogate-grpc-cred-00001"
cat > "$T_DIR/allow.yaml" <<'YAML'
url_prefixes:
  - host: grpc.test
    path: /airlock.Test/*
  - host: grpc2.test
    path: /airlock.Test/*
YAML
cat > "$T_DIR/repl.json" <<JSON
{"$SURR": {"value": "$REAL", "scopes": ["grpc.test"], "headers": ["authorization"]}}
JSON
ip addr add 127.0.0.5/8 dev lo 2>/dev/null || true
t_upstream_ca
t_upstream_cert "DNS:grpc.test,DNS:grpc2.test" "$T_DIR/up"
"$PY" "$HERE/h2_grpc.py" server 127.0.0.5 443 "$T_DIR/up.pem" "$T_DIR/up.key" "$REAL" "$SURR" \
    > "$T_DIR/grpc.log" 2>&1 &
T_PIDS+=($!)
t_wait_port 127.0.0.5 443 || exit 1
t_start_resolver --address=/grpc.test/127.0.0.5 --address=/grpc2.test/127.0.0.5 || exit 1
t_start_airlock "$T_DIR/allow.yaml" --upstream-ca "$T_DIR/upca.pem" \
    --replacements "$T_DIR/repl.json" --allow-upstream-cidr 127.0.0.5/32 || exit 1
CA="$T_DIR/confdir/mitmproxy-ca-cert.pem"
# getaddrinfo, so the client resolves as every other program here (through airlock's DNS)
export GRPC_DNS_RESOLVER=native
call() { # call TARGET CASE [ARGS]
    timeout $((HOLD + 60)) "$PY" "$HERE/h2_grpc.py" client "$CA" "$@" 2>&1 | grep -v '^[DEIW][0-9]\{4\} '
}

t_eq "unary" "unary:hello" "$(call grpc.test:443 unary)"
t_logged "... logged as one POST" '^allowed POST https://grpc\.test/airlock\.Test/Unary -> 200$'
t_eq "server streaming" "msg0 msg1 msg2 msg3 msg4" "$(call grpc.test:443 server-stream)"
t_eq "client streaming" "a,b,c" "$(call grpc.test:443 client-stream)"
t_eq "bidirectional" "echo:1 echo:2 echo:3" "$(call grpc.test:443 bidi)"
t_eq "a handler that aborts: status, details and trailing metadata reach the client" \
    "code=FAILED_PRECONDITION details=aborted on purpose: x x-why=the test asked" \
    "$(call grpc.test:443 abort)"
t_eq "metadata with the surrogate, in scope: the server got the real value" "real" \
    "$(call grpc.test:443 cred "$SURR")"
t_logged "... logged [masked: 1]" '^allowed POST https://grpc\.test/airlock\.Test/Cred -> 200 \[masked: 1\]$'
t_eq "... out of scope (grpc2.test): sent unchanged" "surrogate" "$(call grpc2.test:443 cred "$SURR")"
grep -qF -- "$REAL" "$T_DIR/net.log" "$T_DIR/airlock.err"
t_check "... the real value is in neither the log nor stderr" test $? -ne 0
out=$(call grpc.test:443 blocked airlock.Secret)
t_contains "a method the allowlist does not allow: PERMISSION_DENIED (airlock's 403)" "$out" "code=PERMISSION_DENIED"
t_logged "... logged" '^BLOCKED POST https://grpc\.test/airlock\.Secret/Unary -> 403$'
echo "# holding a bidirectional stream open for $HOLD s (LONG=1: 180 s)"
out=$(call grpc.test:443 hold "$HOLD" 5)
n=$(((${HOLD%.*} + 4) / 5 + 1))
case "$out" in
    "replies=$n last=last@"*) t_ok "a stream held open $HOLD s, a message every 5 s: every reply came ($out)" ;;
    "replies=$((n + 1)) last=last@"*) t_ok "a stream held open $HOLD s, a message every 5 s: every reply came ($out)" ;;
    *) t_fail "a stream held open $HOLD s: [$out] (expected about $n replies)" ;;
esac
kill -0 "$AIRLOCK_PID" 2>/dev/null
t_check "airlock alive" test $? -eq 0
t_stop_airlock
t_eq "SIGTERM: exit 0" "0" "$?"
t_done
