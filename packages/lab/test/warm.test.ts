import { type AddressInfo, connect, createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
// The open loop's ticker runs in a worker thread: use the compiled lab (built by `pnpm test`).
import { measureWarmConnections } from '../dist/bench/warm.js';
import { startRttProxy } from '../src/fleet/rtt-proxy.js';

describe('round-trip proxy', () => {
  it('relays every byte, in order, both ways', async () => {
    // An echo server behind the proxy; 200 writes of growing size must come back whole.
    const echo = createServer((s) => s.pipe(s));
    await new Promise<void>((r) => echo.listen(0, '127.0.0.1', r));
    const proxy = await startRttProxy(
      { host: '127.0.0.1', port: (echo.address() as AddressInfo).port },
      4,
      'tcp:',
    );
    const port = Number(new URL(proxy.origin).port);
    const socket = connect(port, '127.0.0.1');
    let sent = '';
    for (let i = 0; i < 200; i++) {
      const part = `${i}:${'x'.repeat(i)};`;
      sent += part;
      socket.write(part);
    }
    let got = '';
    await new Promise<void>((resolve) => {
      socket.on('data', (d) => {
        got += d.toString();
        if (got.length >= sent.length) resolve();
      });
    });
    expect(got).toBe(sent);
    socket.destroy();
    await proxy.close();
    await new Promise((r) => echo.close(r));
  });
});

describe('warm against cold connections (short run)', () => {
  it('reports both clients side by side', async () => {
    const text = await measureWarmConnections({ rate: 20, seconds: 1 });
    expect(text).toMatch(/\n\| cold \| \d+ \|/);
    expect(text).toMatch(/\n\| warm \| \d+ \|/);
  });
});
