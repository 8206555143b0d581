// Node's http2 module: node h2_client.js CAFILE ORIGIN PATH... -- the paths on one session,
// one line each: "version=2 status=200 body=FIRST-LINE" (the JSON "error" field for an answer
// of airlock's), then "session closed".
'use strict';
const fs = require('fs');
const http2 = require('http2');
const [ca, origin, ...paths] = process.argv.slice(2);
const session = http2.connect(origin, { ca: fs.readFileSync(ca) });
session.on('error', (e) => { console.log('session error: ' + e.message); process.exit(1); });
function get(path) {
    return new Promise((resolve, reject) => {
        const req = session.request({ ':path': path });
        let status = 0, type = '', body = '';
        req.on('response', (h) => { status = h[':status']; type = h['content-type'] || ''; });
        req.setEncoding('utf8');
        req.on('data', (d) => { body += d; });
        req.on('end', () => {
            let first = body.split('\n')[0];
            if (type.startsWith('application/json')) first = 'error:' + JSON.parse(body).error;
            resolve(`version=${session.alpnProtocol === 'h2' ? 2 : session.alpnProtocol} status=${status} body=${first}`);
        });
        req.on('error', reject);
        req.end();
    });
}
(async () => {
    for (const p of paths) console.log(await get(p));
    session.close(() => console.log('session closed'));
})().catch((e) => { console.log('error: ' + e.message); process.exit(1); });
