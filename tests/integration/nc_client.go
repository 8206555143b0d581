// A TLS client on Go's crypto/tls and crypto/x509 (test_ca_constraints.sh): connects to
// IP:PORT with SNI and hostname NAME, trusting only CAFILE; prints OK, or REJECTED and the
// reason (exit 1).
package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"time"
)

func main() {
	name, ip, port, cafile := os.Args[1], os.Args[2], os.Args[3], os.Args[4]
	pem, err := os.ReadFile(cafile)
	if err != nil {
		fmt.Println("ERROR:", err)
		os.Exit(2)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		fmt.Println("ERROR: no certificate in", cafile)
		os.Exit(2)
	}
	d := &net.Dialer{Timeout: 10 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", net.JoinHostPort(ip, port),
		&tls.Config{ServerName: name, RootCAs: pool})
	if err != nil {
		fmt.Println("REJECTED:", err)
		os.Exit(1)
	}
	c.Close()
	fmt.Println("OK")
}
