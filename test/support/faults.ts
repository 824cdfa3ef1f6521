import { createServer, type Socket } from 'node:net';

/** The ways the fault server misbehaves. */
export type Fault =
  | 'ok'
  | 'reset-before-headers'
  | 'reset-mid-body'
  | 'never-answers'
  | 'stalled-body'
  | 'truncated-body'
  | 'malformed-status'
  | 'trickle-body';

/**
 * A raw TCP server that speaks just enough HTTP/1.1 to misbehave on purpose. It counts the
 * requests it saw and the sockets still open, so a test can check that nothing is left running.
 */
export async function startFaultServer(fault: (n: number) => Fault) {
  const sockets = new Set<Socket>();
  let requests = 0;
  const timers = new Set<NodeJS.Timeout>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    let buffer = '';
    socket.on('data', (data) => {
      buffer += data.toString('latin1');
      while (buffer.includes('\r\n\r\n')) {
        const end = buffer.indexOf('\r\n\r\n');
        const head = buffer.slice(0, end);
        const length = Number(/content-length:\s*(\d+)/i.exec(head)?.[1] ?? 0);
        if (buffer.length < end + 4 + length) return;
        buffer = buffer.slice(end + 4 + length);
        respond(socket, fault(requests++));
      }
    });
  });
  const later = (ms: number, fn: () => void) => {
    const t = setTimeout(() => {
      timers.delete(t);
      fn();
    }, ms);
    timers.add(t);
  };
  function respond(socket: Socket, f: Fault): void {
    const ok = 'HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 2\r\n\r\nok';
    switch (f) {
      case 'ok':
        socket.write(ok);
        return;
      case 'reset-before-headers':
        socket.resetAndDestroy();
        return;
      case 'reset-mid-body':
        socket.write('HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\npartial');
        later(5, () => socket.resetAndDestroy());
        return;
      case 'never-answers':
        return;
      case 'stalled-body':
        socket.write('HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\n');
        return;
      case 'truncated-body':
        socket.end('HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nonly ten b');
        return;
      case 'malformed-status':
        socket.end('HTTP/1.1 abc nonsense\r\n\r\n');
        return;
      case 'trickle-body': {
        socket.write('HTTP/1.1 200 OK\r\ncontent-length: 20\r\n\r\n');
        let sent = 0;
        const drip = () => {
          if (socket.destroyed) return;
          socket.write('x');
          if (++sent < 20) later(100, drip);
        };
        drip();
        return;
      }
    }
  }
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  return {
    origin: `http://127.0.0.1:${port}`,
    requests: () => requests,
    openSockets: () => sockets.size,
    close: () =>
      new Promise<void>((resolve) => {
        for (const t of timers) clearTimeout(t);
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
