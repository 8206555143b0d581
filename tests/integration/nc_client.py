"""A TLS client on Python's ssl module (test_ca_constraints.sh): connects to IP:PORT with SNI
and hostname NAME, trusting only CAFILE; prints OK, or REJECTED and the reason (exit 1)."""
import socket
import ssl
import sys

name, ip, port, cafile = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
ctx = ssl.create_default_context(cafile=cafile)
try:
    with socket.create_connection((ip, port), timeout=10) as raw:
        with ctx.wrap_socket(raw, server_hostname=name):
            pass
except ssl.SSLError as e:
    print("REJECTED:", e)
    sys.exit(1)
print("OK")
