/**
 * Hedging over TLS (HTTP/1.1, node:https) and HTTP/2 (node:http2, undici `allowH2`), with the
 * lab's self-signed loopback certificate, and warm connections: what real providers speak.
 */

import { createServer as createHttpServer } from 'node:http';
import {
  createSecureServer,
  type Http2SecureServer,
  constants as h2,
  type ServerHttp2Stream,
} from 'node:http2';
import { createServer as createHttpsServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { LOOPBACK_TLS } from '@tailcut/lab';
import { createHedgedFetch, hedge } from 'tailcut';
import * as undici from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../packages/tailcut/test/support/wait.js';

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((o) => o.close()));
});

/** An undici Agent that trusts the loopback certificate; `allowH2` to speak HTTP/2. */
function agent(allowH2 = false): undici.Agent {
  const a = new undici.Agent({ allowH2, connect: { ca: LOOPBACK_TLS.cert } });
  open.push(a);
  return a;
}

interface TlsReplica {
  origin: string;
  /** TLS connections accepted. */
  connections: number;
  /** Requests by method. */
  methods: string[];
  /** Releases the held requests. */
  release(): void;
}

/** An HTTPS (HTTP/1.1) replica; `hold(n)` keeps its n-th request (not a ping) unanswered. */
async function httpsReplica(name: string, hold: (n: number) => boolean): Promise<TlsReplica> {
  const held: (() => void)[] = [];
  let n = 0;
  const state: TlsReplica = {
    origin: '',
    connections: 0,
    methods: [],
    release: () => {
      for (const r of held.splice(0)) r();
    },
  };
  const server: Server = createHttpsServer(LOOPBACK_TLS, (req, res) => {
    state.methods.push(req.method ?? '');
    req.resume();
    const answer = () => res.end(`ok from ${name}`);
    if (req.method !== 'OPTIONS' && hold(n++)) held.push(answer);
    else answer();
  });
  server.on('secureConnection', () => state.connections++);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  state.origin = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  open.push({
    close: async () => {
      state.release();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  });
  return state;
}

describe('hedging over TLS (HTTP/1.1)', () => {
  it.each(['createHedgedFetch', 'hedge()'])(
    '%s: a held primary is hedged to another HTTPS replica',
    async (which) => {
      const a = await httpsReplica('a', (n) => n === 0);
      const b = await httpsReplica('b', () => false);
      const options = {
        routes: [
          {
            name: 'tls',
            replicas: [a.origin, b.origin],
            hedge: { initialDelayMs: 30, minSamples: 1_000_000 },
          },
        ],
      };
      let text: string;
      if (which === 'createHedgedFetch') {
        const f = createHedgedFetch({ ...options, dispatcher: agent() });
        open.push(f);
        text = await (await f(`${a.origin}/v1/x`)).text();
      } else {
        const d = agent().compose(hedge(options));
        const res = await undici.request(`${a.origin}/v1/x`, { dispatcher: d });
        text = await res.body.text();
      }
      expect(text).toBe('ok from b');
    },
  );
});

interface H2Replica {
  origin: string;
  /** HTTP/2 sessions (connections) opened by clients. */
  sessions: number;
  /** Streams answered. */
  answered: number;
  /** Held streams the client closed before their answer, with the RST_STREAM code each got. */
  cancelled: number[];
}

/** A node:http2 secure server; `hold(n)` keeps its n-th stream unanswered. */
async function h2Replica(name: string, hold: (n: number) => boolean): Promise<H2Replica> {
  let n = 0;
  const state: H2Replica = { origin: '', sessions: 0, answered: 0, cancelled: [] };
  const server: Http2SecureServer = createSecureServer(LOOPBACK_TLS);
  const streams = new Set<ServerHttp2Stream>();
  server.on('session', () => state.sessions++);
  server.on('stream', (stream) => {
    streams.add(stream);
    stream.on('error', () => {});
    stream.on('close', () => {
      streams.delete(stream);
      if (!stream.headersSent) state.cancelled.push(stream.rstCode);
    });
    if (!hold(n++)) {
      stream.respond({ ':status': 200 });
      stream.end(`ok from ${name}`);
      state.answered++;
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  state.origin = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  open.push({
    close: async () => {
      for (const s of streams) s.close(h2.NGHTTP2_CANCEL);
      await new Promise((r) => server.close(r));
    },
  });
  return state;
}

describe('hedging over HTTP/2 (undici allowH2, node:http2)', () => {
  it('cancels the loser with RST_STREAM and keeps its connection for the next call', async () => {
    const a = await h2Replica('a', (n) => n === 0);
    const b = await h2Replica('b', () => false);
    const f = createHedgedFetch({
      routes: [
        {
          name: 'h2',
          replicas: [a.origin, b.origin],
          hedge: { initialDelayMs: 30, minSamples: 1_000_000 },
        },
      ],
      dispatcher: agent(true),
    });
    open.push(f);
    const first = await f(`${a.origin}/v1/x`);
    expect(await first.text()).toBe('ok from b');
    // The held primary on `a` was reset, not left running, and its session was not closed.
    await waitFor(() => a.cancelled.length === 1, { message: () => JSON.stringify(a) });
    expect(a.cancelled).toEqual([h2.NGHTTP2_NO_ERROR]);
    // The next calls reuse the session: `a` answers the third (round robin) on its one session.
    for (let i = 0; i < 3; i++) await (await f(`${a.origin}/v1/x`)).text();
    expect(a.answered).toBeGreaterThanOrEqual(1);
    expect(a.sessions).toBe(1);
    expect(b.sessions).toBe(1);
  });
});

/** Resolves after the event loop has polled for I/O twice: a response already sent has been read. */
async function afterPendingIo(): Promise<void> {
  for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
}

describe('warm connections', () => {
  it('opens every replica’s connection at start and hedges over it, not over a new one', async () => {
    const a = await httpsReplica('a', (n) => n === 0);
    const b = await httpsReplica('b', () => false);
    const f = createHedgedFetch({
      routes: [
        {
          name: 'warm',
          replicas: [a.origin, { origin: b.origin, name: 'b', hedgeOnly: true }],
          hedge: { initialDelayMs: 30, minSamples: 1_000_000 },
        },
      ],
      dispatcher: agent(),
      // One ping at start (the next one is a minute away): the hedge finds its connection idle.
      warmConnections: { intervalMs: 60_000 },
    });
    open.push(f);
    // Before any call, each replica has a TLS connection, opened by the ping.
    await waitFor(() => a.methods.includes('OPTIONS') && b.methods.includes('OPTIONS'));
    await afterPendingIo();
    expect(b.connections).toBe(1);
    const res = await f(`${a.origin}/v1/x`);
    expect(await res.text()).toBe('ok from b');
    expect(b.methods).toEqual(['OPTIONS', 'GET']);
    expect(b.connections).toBe(1);
    await f.close();
    expect(f.stats().routes.warm?.replicas.b).toMatchObject({ attempts: 1, won: 1 });
  });

  it('hedge(): pings every interval over the one connection it keeps', async () => {
    const a = await httpsReplica('a', () => false);
    // Composing starts the pings; closing the agent (after the test) stops them.
    agent().compose(
      hedge({
        routes: [{ name: 'w', replicas: [a.origin] }],
        warmConnections: { intervalMs: 100 },
      }),
    );
    await waitFor(() => a.methods.filter((m) => m === 'OPTIONS').length >= 3);
    expect(a.connections).toBe(1);
  });

  it('a replica that accepts and never answers holds neither close(): the ping still out is aborted', async () => {
    let pings = 0;
    const mute = createHttpServer(() => {
      pings++; // never answers
    });
    await new Promise<void>((r) => mute.listen(0, '127.0.0.1', r));
    open.push({ close: () => new Promise<void>((r) => mute.close(() => r())) });
    const origin = `http://127.0.0.1:${(mute.address() as AddressInfo).port}`;
    const f = createHedgedFetch({
      routes: [{ name: 'mute', replicas: [origin] }],
      warmConnections: { intervalMs: 60_000 },
    });
    const composed = new undici.Agent().compose(
      hedge({
        routes: [{ name: 'mute', replicas: [origin] }],
        warmConnections: { intervalMs: 1000 },
      }),
    );
    await waitFor(() => pings >= 2);
    let closed = 0;
    void f.close().then(() => closed++);
    void composed.close().then(() => closed++);
    // createHedgedFetch's close() aborts its ping; the plain agent's waits for the ping's
    // timeout (the interval here, at most 10 s), not undici's 300 s.
    await waitFor(() => closed === 2, { timeoutMs: 15_000 });
    mute.closeAllConnections();
  }, 30_000);
});
