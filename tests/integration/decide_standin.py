"""A stand-in decision webhook for test_decide.sh: answers each POST as the file MODE says
(allow, allow-conversation, deny, hang, 500, garbage) and appends each call's body, one line,
to CALLS. Usage: decide_standin.py ADDR PORT MODE CALLS [CERT KEY] (with CERT and KEY: https)"""
import http.server
import ssl
import sys
import time

ADDR, PORT, MODE, CALLS = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]


class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with open(CALLS, "ab") as f:
            f.write(self.headers.get("Content-Type", "-").encode() + b" " + body + b"\n")
        with open(MODE) as f:
            mode = f.read().strip()
        if mode == "hang":
            time.sleep(30)
            return
        code, out = 200, b'{"decision": "deny"}'
        if mode == "allow":
            out = b'{"decision": "allow", "scope": "once"}'
        elif mode == "allow-conversation":
            out = b'{"decision": "allow", "scope": "conversation"}'
        elif mode == "500":
            code, out = 500, b'{"decision": "allow"}'
        elif mode == "garbage":
            out = b'{"decision": "yes please"'
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


http.server.ThreadingHTTPServer.daemon_threads = True
srv = http.server.ThreadingHTTPServer((ADDR, PORT), H)
if len(sys.argv) > 6:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(sys.argv[5], sys.argv[6])
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
srv.serve_forever()
