// A TLS client on Node's tls module (test_ca_constraints.sh): connects to IP:PORT with SNI and
// hostname NAME, trusting only CAFILE; prints OK, or REJECTED and the reason (exit 1).
'use strict';
const fs = require('fs');
const tls = require('tls');
const [name, ip, port, cafile] = process.argv.slice(2);
const s = tls.connect({ host: ip, port: Number(port), servername: name,
                        ca: [fs.readFileSync(cafile)] }, () => {
  console.log('OK');
  s.end();
  process.exit(0);
});
s.setTimeout(10000, () => { console.log('REJECTED: timeout'); process.exit(1); });
s.on('error', (e) => { console.log('REJECTED:', e.code || '', e.message); process.exit(1); });
