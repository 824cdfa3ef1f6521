import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WAIT_TIMEOUT_MS } from './wait.js';

/** What a test replica does with its n-th request (0-based). */
export interface Behaviour {
  /** Milliseconds before answering; `Infinity` never answers. Default 0. */
  delayMs?: number;
  /**
   * Hold the answer until the test calls {@link Replica.release} (or the client gives up): an
   * explicit gate, for tests that need a hedge to fire (or not) whatever the machine's speed.
   * After {@link WAIT_TIMEOUT_MS} it answers anyway (header `x-held: expired`), so that a test
   * whose hedge never comes fails on the answer it gets instead of hanging until it times out.
   */
  hold?: boolean;
  /** Status to answer. Default 200. */
  status?: number;
  /** Body to answer. Default `ok from <name>`. */
  body?: string;
  /** Destroy the socket instead of answering. */
  reset?: boolean;
  /** Extra response headers. */
  headers?: Record<string, string>;
}

/** One request as the replica saw it. */
export interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
  startedAt: number;
  /** When the client closed the connection before the answer was sent, else undefined. */
  abortedAt?: number;
  answered: boolean;
}

/** A loopback HTTP server that records what it receives. */
export interface Replica {
  name: string;
  origin: string;
  seen: Seen[];
  /** Requests whose answer is still pending. */
  inFlight(): number;
  /** Requests held (behaviour `hold`) and not yet released nor closed by the client. */
  holding(): number;
  /** Answers every request held so far; later held requests wait for the next call. */
  release(): void;
  close(): Promise<void>;
}

/** Starts a replica on 127.0.0.1 with a per-request behaviour. */
export async function startReplica(
  name: string,
  behave: (n: number, seen: Seen) => Behaviour = () => ({}),
): Promise<Replica> {
  const seen: Seen[] = [];
  const held = new Set<() => void>();
  let pending = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    const record: Seen = {
      method: req.method ?? '',
      url: req.url ?? '',
      headers: req.headers,
      body: Buffer.alloc(0),
      startedAt: performance.now(),
      answered: false,
    };
    const n = seen.length;
    seen.push(record);
    pending++;
    let done = false;
    const finish = () => {
      if (!done) {
        done = true;
        pending--;
      }
    };
    res.on('close', () => {
      if (!record.answered) record.abortedAt = performance.now();
      finish();
    });
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      record.body = Buffer.concat(chunks);
      const b = behave(n, record);
      const answer = (extra: Record<string, string> = {}) => {
        if (res.destroyed) return;
        if (b.reset) {
          req.socket.destroy();
          return;
        }
        record.answered = true;
        res.writeHead(b.status ?? 200, {
          'content-type': 'text/plain',
          'x-replica': name,
          ...b.headers,
          ...extra,
        });
        res.end(b.body ?? `ok from ${name}`);
      };
      if (b.hold) {
        const release = () => {
          clearTimeout(expiry);
          held.delete(release);
          answer();
        };
        const expiry = setTimeout(() => {
          held.delete(release);
          answer({ 'x-held': 'expired' });
        }, WAIT_TIMEOUT_MS);
        held.add(release);
        res.on('close', () => {
          clearTimeout(expiry);
          held.delete(release);
        });
        return;
      }
      const delay = b.delayMs ?? 0;
      if (delay === Number.POSITIVE_INFINITY) return;
      if (delay <= 0) answer();
      else {
        const t = setTimeout(() => answer(), delay);
        res.on('close', () => clearTimeout(t));
      }
    });
  });
  server.keepAliveTimeout = 1000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    name,
    origin: `http://127.0.0.1:${port}`,
    seen,
    inFlight: () => pending,
    holding: () => held.size,
    release() {
      for (const release of [...held]) release();
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A loopback server with its own handler (for behaviours a replica does not model). */
export async function serve(
  handler: Parameters<typeof createServer>[1],
): Promise<{ origin: string; server: Server; close(): Promise<void> }> {
  const server = createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
