/**
 * A minimal loopback HTTP server for overhead benchmarks, run in a child process so that its
 * CPU is not counted as the client's. `/hold` requests wait until the parent sends "release".
 */
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

const body = JSON.stringify({ ok: true, data: 'x'.repeat(64) });
const held: ServerResponse[] = [];

const server = createServer((req, res) => {
  if (req.url?.startsWith('/hold')) {
    held.push(res);
    if (held.length % 100 === 0) process.send?.({ held: held.length });
    return;
  }
  res.writeHead(200, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
  });
  res.end(body);
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  process.send?.({ port: (server.address() as AddressInfo).port });
});
process.on('message', (message) => {
  if (message === 'release') {
    for (const res of held.splice(0)) res.end(body);
  }
});
