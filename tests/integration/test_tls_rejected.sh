#!/bin/bash
# Issue 14, part 4: a client that does not trust airlock's CA aborts the handshake; airlock
# writes one "TLS REJECTED host (...)" line naming the alert, the runtime the ClientHello looked
# like and the fix for it, at most once per host per minute; never for a client that trusts
# the CA. The real runtimes installed here: curl, Python (urllib, requests), Node, Go, Java.
. "$(dirname "$0")/lib.sh"
t_enter_netns "$@"
HERE=$(cd "$(dirname "$0")" && pwd)
printf 'domains: ["*.test"]\n' > "$T_DIR/allow.yaml"
t_start_resolver || exit 1
t_start_airlock "$T_DIR/allow.yaml" || exit 1
CA="$T_DIR/confdir/mitmproxy-ca-cert.pem"
t_check "a new CA is announced on stderr with the file agents must trust" \
    grep -q "created a new CA in $T_DIR/confdir: agents must trust $CA" "$T_DIR/airlock.err"
# -XX:-UsePerfData: a JVM (javac, keytool, java) would leave /tmp/hsperfdata_<user> behind
export HOME="$T_DIR/home" GOCACHE="$T_DIR/gocache" GOPATH="$T_DIR/gopath" GOFLAGS=-mod=mod \
    JAVA_TOOL_OPTIONS=-XX:-UsePerfData
mkdir -p "$HOME"
rej() { grep -c "^TLS REJECTED $1 " "$T_DIR/net.log"; }

# each runtime, once without airlock's CA (name untrusted-X.test), once with it (trusted-X.test)
cat > "$T_DIR/get.go" <<'GO'
package main

import (
	"fmt"
	"net/http"
	"os"
)

func main() {
	r, err := http.Get("https://" + os.Args[1] + "/")
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println("status:", r.StatusCode)
}
GO
cat > "$T_DIR/Get.java" <<'JAVA'
public class Get {
    public static void main(String[] a) throws Exception {
        try {
            java.net.HttpURLConnection c = (java.net.HttpURLConnection)
                new java.net.URL("https://" + a[0] + "/").openConnection();
            System.out.println("status: " + c.getResponseCode());
        } catch (Exception e) {
            System.out.println("error: " + e);
        }
    }
}
JAVA
(cd "$T_DIR" && go build -o get-go get.go) || t_fail "go build"
(cd "$T_DIR" && javac Get.java) || t_fail "javac"
keytool -importcert -noprompt -alias airlock -file "$CA" -keystore "$T_DIR/trust.jks" \
    -storepass changeit > /dev/null 2>&1 || t_fail "keytool"

run() { # run RUNTIME HOST trusted|untrusted
    local h=$2
    case "$1:$3" in
    curl:untrusted) curl -s -m 5 "https://$h/" ;;
    curl:trusted) curl -s -m 5 --cacert "$CA" "https://$h/" ;;
    python:untrusted) "$PY" -c "import urllib.request as u; u.urlopen('https://$h/', timeout=5)" ;;
    python:trusted) SSL_CERT_FILE="$CA" "$PY" -c "import urllib.request as u, urllib.error as e
try: u.urlopen('https://$h/', timeout=5)
except e.HTTPError: pass" ;;
    requests:untrusted) "$PY" -c "import requests; requests.get('https://$h/', timeout=5)" ;;
    requests:trusted) REQUESTS_CA_BUNDLE="$CA" "$PY" -c "import requests; requests.get('https://$h/', timeout=5)" ;;
    node:untrusted) node -e "require('https').get('https://$h/').on('error', () => {})" ;;
    node:trusted) NODE_EXTRA_CA_CERTS="$CA" node -e "require('https').get('https://$h/', r => r.resume()).on('error', e => console.log(e.message))" ;;
    go:untrusted) "$T_DIR/get-go" "$h" ;;
    go:trusted) SSL_CERT_FILE="$CA" "$T_DIR/get-go" "$h" ;;
    java:untrusted) java -cp "$T_DIR" Get "$h" ;;
    java:trusted) java -Djavax.net.ssl.trustStore="$T_DIR/trust.jks" -cp "$T_DIR" Get "$h" ;;
    esac > "$T_DIR/run.out" 2>&1
}

for rt in curl:curl python:Python requests:Python node:Node go:Go java:Java; do
    r=${rt%%:*}
    name=${rt#*:}
    run "$r" "untrusted-$r.test" untrusted
    t_logged "$r without airlock's CA: TLS REJECTED, naming $name" \
        "^TLS REJECTED untrusted-$r\\.test (.*the client does not trust airlock's CA; it looks like $name"
    run "$r" "trusted-$r.test" trusted
    t_wait_log "trusted-$r\\.test" # the request's own line (a 502: no upstream here)
    t_eq "$r with airlock's CA: no TLS REJECTED line" "0" "$(rej "trusted-$r\\.test")"
done
t_logged "the alert is named (curl: unknown ca)" \
    '^TLS REJECTED untrusted-curl\.test (client alert: unknown CA;'
# at most one line per host per minute
run curl untrusted-curl.test untrusted
run curl untrusted-curl.test untrusted
# a trusted request after them: once its line is in the log, so is any line they caused
run curl after-curl.test trusted
t_wait_log 'after-curl\.test' || t_fail "no line for the request after the refusals"
t_eq "a second and third refusal within the minute: still one line" "1" "$(rej 'untrusted-curl\.test')"
grep '^TLS REJECTED' "$T_DIR/net.log" | sed 's/^/# /'
t_stop_airlock
# a bare run: no network log file means no audit log, said once; an existing CA is not news
"$AIRLOCK" run --proxy-ip 127.0.0.1 --upstream-dns 127.0.0.53 --allowlist "$T_DIR/allow.yaml" \
    --log "$T_DIR/missing.log" --confdir "$T_DIR/confdir" --listen-dns off \
    --listen-http 127.0.0.1:8080 --listen-https off 2> "$T_DIR/bare.err" &
T_PIDS+=($!)
until_ok 'grep -q ready "$T_DIR/bare.err"' || t_fail "the bare run never got ready"
t_eq "a missing network log is said once on stderr" "1" \
    "$(grep -c "network log $T_DIR/missing.log does not exist: no audit log will be written" "$T_DIR/bare.err")"
t_eq "an existing CA is not announced" "0" "$(grep -c 'created a new CA' "$T_DIR/bare.err")"
t_done
