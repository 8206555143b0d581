// Go's net/http (stdlib only): h2_client CAFILE URL... -- the URLs in turn on one client, one
// line each: "version=HTTP/2.0 status=200 body=FIRST-LINE" (the JSON "error" field for an
// answer of airlock's).
package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

func main() {
	pem, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}
	c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	for _, u := range os.Args[2:] {
		r, err := c.Get(u)
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		first := strings.SplitN(string(b), "\n", 2)[0]
		if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
			var j map[string]interface{}
			_ = json.Unmarshal(b, &j)
			first = fmt.Sprintf("error:%v", j["error"])
		}
		fmt.Printf("version=%s status=%d body=%s\n", r.Proto, r.StatusCode, first)
	}
}
