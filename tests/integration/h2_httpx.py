#!/usr/bin/python3
"""httpx with http2=True: h2_httpx.py CAFILE URL... -- one line per URL, on one connection:
"version=HTTP/2 status=200 body=FIRST-LINE" (the JSON "error" field for an answer of airlock's)."""
import json
import sys

import httpx

with httpx.Client(http2=True, verify=sys.argv[1], timeout=10) as c:
    for url in sys.argv[2:]:
        r = c.get(url)
        body = r.text.splitlines()[0] if r.text else ""
        if r.headers.get("content-type", "").startswith("application/json"):
            body = "error:" + json.loads(r.text).get("error", "-")
        print("version=%s status=%d body=%s" % (r.http_version, r.status_code, body))
