// For test_budget.sh: an HTTP/2 upload of unknown length (no content-length), streamed in
// 16 KiB writes as the flow-control window allows, reading the answer while it sends (curl
// 7.88 drops an early answer followed by RST_STREAM(NO_ERROR), which RFC 9113 section 8.1
// allows). Prints "STATUS BODY" or "error CODE", then "sent N".
//   node budget_h2.js URL TOTAL CA-FILE
'use strict';
const http2 = require('http2');
const fs = require('fs');
const [url, totalArg, caFile] = process.argv.slice(2);
const u = new URL(url);
const total = Number(totalArg);
const session = http2.connect(u.origin, { ca: fs.readFileSync(caFile) });
session.on('error', (e) => { console.log('error ' + e.code); process.exit(0); });
const req = session.request({ ':method': 'PUT', ':path': u.pathname + u.search });
const piece = Buffer.alloc(16384, 'u');
let sent = 0;
let status = 0;
let body = '';
let done = false;
function pump() {
  while (!done && sent < total) {
    sent += piece.length;
    if (!req.write(piece)) { req.once('drain', pump); return; }
  }
  if (!done) req.end();
}
req.on('response', (h) => { status = h[':status']; });
req.on('data', (d) => { body += d; });
function finish(what) {
  if (done) return;
  done = true;
  console.log(what);
  console.log('sent ' + sent);
  session.destroy();
}
req.on('end', () => finish(status + ' ' + body));
req.on('error', (e) => finish(status ? status + ' ' + body : 'error ' + e.code));
req.on('close', () => finish(status ? status + ' ' + body : 'closed'));
pump();
