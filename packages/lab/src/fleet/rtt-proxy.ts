import { connect, createServer, type Server, type Socket } from 'node:net';

/** A TCP proxy on 127.0.0.1 that puts a network round trip between a client and a server. */
export interface RttProxy {
  origin: string;
  close(): Promise<void>;
}

/**
 * Forwards bytes in order, each one way after `rttMs / 2`, and the first bytes of a connection
 * one round trip later still (the TCP handshake a loopback connect skips). So a new TLS
 * connection costs what it costs over a network (TCP + TLS 1.3: two round trips before the
 * request leaves), and a request on an open one costs one. It sees only bytes: TLS passes
 * through to the server, whose certificate the client checks.
 */
export async function startRttProxy(
  target: { host: string; port: number },
  rttMs: number,
  protocol = 'https:',
): Promise<RttProxy> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(target.port, target.host);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    relay(client, upstream, rttMs / 2, rttMs);
    relay(upstream, client, rttMs / 2, 0);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return {
    origin: `${protocol}//127.0.0.1:${port}`,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

/** Pipes `from` to `to` with a one-way delay, in order; the first bytes wait `firstExtraMs` more. */
function relay(from: Socket, to: Socket, delayMs: number, firstExtraMs: number): void {
  const queue: { due: number; act: () => void }[] = [];
  let timer: NodeJS.Timeout | undefined;
  let first = true;
  const drain = () => {
    timer = undefined;
    const now = performance.now();
    while (queue.length > 0 && (queue[0]?.due ?? 0) <= now) queue.shift()?.act();
    const next = queue[0];
    if (next !== undefined) timer = setTimeout(drain, Math.max(0, next.due - now));
  };
  const later = (act: () => void) => {
    queue.push({ due: performance.now() + delayMs + (first ? firstExtraMs : 0), act });
    first = false;
    if (timer === undefined)
      timer = setTimeout(drain, Math.max(0, (queue[0]?.due ?? 0) - performance.now()));
  };
  from.on('data', (chunk) => later(() => to.destroyed || to.write(chunk)));
  from.on('end', () => later(() => to.end()));
  from.on('close', () => later(() => to.destroy()));
}
