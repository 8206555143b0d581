#!/usr/bin/python3
"""An OTLP/HTTP logs collector stand-in (tests/integration/test_otel.sh).

It checks every request against the OTLP specification's JSON encoding (POST to the logs
path, Content-Type application/json, the ExportLogsServiceRequest shape: resourceLogs[] with
resource.attributes, scopeLogs[] with scope, logRecords[] with their fields, KeyValue and
AnyValue shapes, 64-bit integers as decimal strings) and records what it got:

  OUT/records.jsonl   one line per log record accepted: {"resource": {k: v}, "scope": {...},
                      "headers": {...}, "record": {...}}
  OUT/requests.jsonl  one line per request: {"status": answered, "records": n, "conn": the
                      connection's number, "client": the client certificate's CN or "-"}
  OUT/errors.txt      one line per violation of the specification (the test wants none)
  OUT/handshake_failures.txt  one line per TLS handshake that failed (https)

--tls-cert/--tls-key serve https (the test's CA signs them); --idle-close S closes a connection
that carried nothing for S seconds (as real collectors do); --client-ca asks the client for a
certificate (optional: a client without one is still served, its line says "client=-").

Modes: ok (200), slow:S (sleeps S seconds, then 200), fail:N (the first N requests get 503,
the very first a 429 with Retry-After: 1, then 200).
"""
import argparse
import http.server
import json
import os
import re
import ssl
import threading
import time

ANY_KEYS = {"stringValue", "boolValue", "intValue", "doubleValue", "arrayValue",
            "kvlistValue", "bytesValue"}
LOCK = threading.Lock()
STATE = {"n": 0, "conns": 0}


def check_any(v, where, errs):
    if not isinstance(v, dict) or len(v) != 1 or next(iter(v)) not in ANY_KEYS:
        errs.append(f"{where}: not an AnyValue: {v!r}")
        return None
    k, x = next(iter(v.items()))
    if k == "intValue" and not (isinstance(x, str) and re.fullmatch(r"-?[0-9]+", x)):
        errs.append(f"{where}: intValue not a decimal string: {x!r}")
    if k == "stringValue" and not isinstance(x, str):
        errs.append(f"{where}: stringValue not a string")
    if k == "doubleValue" and not isinstance(x, (int, float)):
        errs.append(f"{where}: doubleValue not a number")
    if k == "boolValue" and not isinstance(x, bool):
        errs.append(f"{where}: boolValue not a bool")
    return int(x) if k == "intValue" else x


def check_attrs(attrs, where, errs):
    out = {}
    if not isinstance(attrs, list):
        errs.append(f"{where}: attributes not a list")
        return out
    for a in attrs:
        if not isinstance(a, dict) or set(a) != {"key", "value"} or not isinstance(a["key"], str):
            errs.append(f"{where}: not a KeyValue: {a!r}")
            continue
        if a["key"] in out:
            errs.append(f"{where}: attribute {a['key']} twice")
        out[a["key"]] = check_any(a["value"], f"{where}.{a['key']}", errs)
    return out


def check_record(r, errs):
    for f in ("timeUnixNano", "observedTimeUnixNano"):
        if not (isinstance(r.get(f), str) and re.fullmatch(r"[1-9][0-9]{18}", r[f])):
            errs.append(f"logRecord.{f}: not nanoseconds as a decimal string: {r.get(f)!r}")
    if not (isinstance(r.get("severityNumber"), int) and 1 <= r["severityNumber"] <= 24):
        errs.append(f"logRecord.severityNumber: {r.get('severityNumber')!r}")
    if r.get("severityText") not in ("INFO", "WARN", "ERROR"):
        errs.append(f"logRecord.severityText: {r.get('severityText')!r}")
    body = check_any(r.get("body"), "logRecord.body", errs)
    if not isinstance(body, str) or not body:
        errs.append("logRecord.body: not a non-empty string")
    known = {"timeUnixNano", "observedTimeUnixNano", "severityNumber", "severityText", "body",
             "attributes", "droppedAttributesCount", "flags", "traceId", "spanId", "eventName"}
    for k in r:
        if k not in known:
            errs.append(f"logRecord: unknown field {k}")
    return {"time": r.get("timeUnixNano"), "observed": r.get("observedTimeUnixNano"),
            "severity": r.get("severityNumber"), "severityText": r.get("severityText"),
            "body": body, "attributes": check_attrs(r.get("attributes", []), "logRecord", errs)}


def check_envelope(doc, errs):
    """Returns [(resource attrs, scope, record)] of a valid ExportLogsServiceRequest."""
    got = []
    if not isinstance(doc, dict) or not isinstance(doc.get("resourceLogs"), list):
        errs.append("no resourceLogs list")
        return got
    for rl in doc["resourceLogs"]:
        res = check_attrs(rl.get("resource", {}).get("attributes", []), "resource", errs)
        if "service.name" not in res:
            errs.append("resource: no service.name")
        for sl in rl.get("scopeLogs", []):
            scope = sl.get("scope")
            if not isinstance(scope, dict) or not isinstance(scope.get("name"), str):
                errs.append("scopeLogs[].scope: no name")
                scope = {}
            recs = sl.get("logRecords")
            if not isinstance(recs, list) or not recs:
                errs.append("scopeLogs[].logRecords: not a non-empty list")
                continue
            for r in recs:
                got.append((res, scope, check_record(r, errs)))
    return got


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self):
        # a number per connection: keep-alive shows as many requests with one number
        super().setup()
        self.client = "-"
        if self.server.args.client_ca:
            for rdn in (self.connection.getpeercert() or {}).get("subject", ()):
                for k, v in rdn:
                    if k == "commonName":
                        self.client = v
        with LOCK:
            STATE["conns"] += 1
            self.conn_id = STATE["conns"]

    def log_message(self, *a):
        pass

    def answer(self, status, extra=None):
        body = b"{}"
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        args = self.server.args
        errs = []
        n = int(self.headers.get("Content-Length", "-1"))
        if n < 0:
            errs.append("no Content-Length")
        data = self.rfile.read(max(n, 0))
        if self.path != args.path:
            errs.append(f"POST to {self.path}, not {args.path}")
        ctype = self.headers.get("Content-Type", "")
        if ctype.split(";")[0].strip() != "application/json":
            errs.append(f"Content-Type {ctype!r}")
        with LOCK:
            STATE["n"] += 1
            nth = STATE["n"]
        mode, _, arg = args.mode.partition(":")
        if mode == "slow":
            time.sleep(float(arg))
        status, extra = 200, None
        if mode == "fail" and nth <= int(arg):
            status, extra = (429, {"Retry-After": "1"}) if nth == 1 else (503, None)
        try:
            doc = json.loads(data)
        except ValueError as e:
            errs.append(f"invalid JSON: {e}")
            doc = None
        got = check_envelope(doc, errs) if doc is not None else []
        headers = {k.lower(): v for k, v in self.headers.items()}
        with LOCK:
            with open(os.path.join(args.out, "requests.jsonl"), "a") as f:
                f.write(json.dumps({"status": status, "records": len(got),
                                    "conn": self.conn_id, "client": self.client}) + "\n")
            if errs:
                with open(os.path.join(args.out, "errors.txt"), "a") as f:
                    f.write("".join(e + "\n" for e in errs))
            if status == 200:
                with open(os.path.join(args.out, "records.jsonl"), "a") as f:
                    for res, scope, rec in got:
                        f.write(json.dumps({"resource": res, "scope": scope,
                                            "headers": headers, "record": rec}) + "\n")
        try:
            self.answer(status, extra)
        except OSError:
            pass  # the exporter gave up waiting (the slow mode)

    def do_GET(self):
        self.answer(405)


class TLSServer(http.server.ThreadingHTTPServer):
    """https: the handshake runs on the connection's own thread (a client that fails it, e.g.
    one that refuses the certificate, costs the accept loop nothing), and a failed handshake
    is no connection (handshake_failures.txt counts it)."""

    def process_request_thread(self, request, client_address):
        try:
            request = self.ctx.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError):
            request.close()
            with LOCK:
                with open(os.path.join(self.args.out, "handshake_failures.txt"), "a") as f:
                    f.write("failed\n")
            return
        super().process_request_thread(request, client_address)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--listen", default="127.0.0.2:4318")
    p.add_argument("--path", default="/v1/logs")
    p.add_argument("--mode", default="ok")
    p.add_argument("--out", required=True)
    p.add_argument("--tls-cert")
    p.add_argument("--tls-key")
    p.add_argument("--client-ca")
    p.add_argument("--idle-close", type=float,
                   help="close a connection idle this many seconds (as collectors do)")
    args = p.parse_args()
    if args.idle_close:
        Handler.timeout = args.idle_close
    host, port = args.listen.rsplit(":", 1)
    srv = TLSServer((host, int(port)), Handler) if args.tls_cert else \
        http.server.ThreadingHTTPServer((host, int(port)), Handler)
    if args.tls_cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(args.tls_cert, args.tls_key)
        if args.client_ca:
            ctx.load_verify_locations(args.client_ca)
            ctx.verify_mode = ssl.CERT_OPTIONAL
        srv.ctx = ctx
    srv.daemon_threads = True
    srv.args = args
    srv.serve_forever()


if __name__ == "__main__":
    main()
