import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { hedge } from 'tailcut';
import * as undici from 'undici';
import { type RttProxy, startRttProxy } from '../fleet/rtt-proxy.js';
import { openLoop } from '../load/open-loop.js';
import { normal, rng } from '../random.js';
import type { Strategy } from '../strategies.js';
import { LOOPBACK_TLS } from '../tls/loopback-cert.js';
import { firstToken } from './inference.js';

/** Options of {@link measureWarmConnections}. */
export interface WarmOptions {
  /** Calls per second. Default 20. */
  rate?: number;
  /** Measured seconds. Default 30. */
  seconds?: number;
  /** Network round trip put in front of each replica, ms. Default 20. */
  rttMs?: number;
  /**
   * How long an idle connection stays open (the client's keep-alive), ms. Default 250: shorter
   * than the time between two hedges, as it is on a route of a few calls a second.
   */
  keepAliveMs?: number;
  log?: (line: string) => void;
}

/** TTFT of call `id` on replica `replica`: lognormal, median 40 ms, σ 0.3, 3% stalls ×10. */
function ttftMs(replica: number, id: number): number {
  const random = rng((id + 1) * 7919 + replica * 104_729);
  const ms = 40 * Math.exp(0.3 * normal(random));
  return random() < 0.03 ? ms * 10 : ms;
}

/**
 * An HTTPS replica streaming OpenAI chunks, the first token after `ttftMs`. Counts the calls
 * (POSTs) it gets, and those that came on a new connection (paying TCP and TLS setup).
 */
async function tlsReplica(index: number) {
  const state = { posts: 0, postsOnNewConnection: 0 };
  const served = new WeakMap<object, number>();
  const server = createServer(LOOPBACK_TLS, (req, res) => {
    req.resume();
    const before = served.get(req.socket) ?? 0;
    served.set(req.socket, before + 1);
    if (req.method !== 'POST') {
      res.end();
      return;
    }
    state.posts++;
    if (before === 0) state.postsOnNewConnection++;
    const id = Number(req.headers['x-lab-call'] ?? 0);
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(': ok\n\n');
    const timer = setTimeout(
      () => {
        for (let t = 0; t < 3; t++) {
          res.write(`data: {"choices":[{"index":0,"delta":{"content":"t${t} "}}]}\n\n`);
        }
        res.end('data: [DONE]\n\n');
      },
      ttftMs(index, id),
    );
    res.on('close', () => clearTimeout(timer));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    state,
    port,
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

/**
 * Warm against cold connections over TLS: the same route (a primary replica and a hedge-only
 * replica, each behind a network round trip) driven open loop by two clients side by side in
 * one run, one with `warmConnections`. Both see the same TTFT for the same call. Reports, per
 * client, the hedge win rate, the hedges that paid for a new connection, and TTFT percentiles.
 */
export async function measureWarmConnections(o: WarmOptions = {}): Promise<string> {
  const rate = o.rate ?? 20;
  const seconds = o.seconds ?? 30;
  const rttMs = o.rttMs ?? 20;
  const keepAliveMs = o.keepAliveMs ?? 250;
  const modes = [
    { name: 'cold', warm: false },
    { name: 'warm', warm: true },
  ];
  const started = await Promise.all(
    modes.map(async (mode) => {
      const replicas = [await tlsReplica(0), await tlsReplica(1)];
      const proxies: RttProxy[] = [];
      for (const r of replicas) {
        proxies.push(await startRttProxy({ host: '127.0.0.1', port: r.port }, rttMs));
      }
      const [primary, backup] = proxies.map((p) => p.origin) as [string, string];
      const interceptor = hedge({
        routes: [
          {
            name: 'chat',
            replicas: [primary, { origin: backup, name: 'backup', hedgeOnly: true }],
            idempotent: true,
            commitOn: 'first-token',
            hedge: { percentile: 95, minSamples: 20, initialDelayMs: 200 },
          },
        ],
        warmConnections: mode.warm ? { intervalMs: Math.max(100, keepAliveMs / 2) } : false,
      });
      const agent = new undici.Agent({
        connect: { ca: LOOPBACK_TLS.cert },
        keepAliveTimeout: keepAliveMs,
        keepAliveMaxTimeout: keepAliveMs,
      });
      const strategy: Strategy = firstToken(mode.name, agent.compose(interceptor), [primary], () =>
        interceptor.stats(),
      );
      return { mode, replicas, proxies, strategy, agent };
    }),
  );
  o.log?.(`warm: ${rate} calls/s, ${seconds} s, RTT ${rttMs} ms, keep-alive ${keepAliveMs} ms`);
  const results = await Promise.all(
    started.map((s) => openLoop(s.strategy, { rate, seconds, warmupSeconds: 3, seed: 11 })),
  );
  const ms = (us: number) => (us / 1000).toFixed(0);
  const out = [
    `Warm against cold connections over TLS: a primary replica and a hedge-only one, each behind a ${rttMs} ms round trip (a new TLS connection: 2 round trips before the request), TTFT lognormal median 40 ms (σ 0.3) with 3% stalls ×10, the same draw for the same call in both clients; ${rate} calls/s open loop, ${seconds} s measured after 3 s, both clients side by side; idle connections close after ${keepAliveMs} ms (hedges are rarer than that); warm: \`warmConnections: { intervalMs: ${Math.max(100, keepAliveMs / 2)} }\`.`,
    '',
    '| connections | calls | hedges sent | hedges won | win rate | hedges on a new connection | TTFT p50 ms | p99 ms | p99.9 ms | max ms | send lag ok |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  started.forEach((s, i) => {
    const r = results[i];
    const st = s.strategy.stats?.().routes.chat;
    if (r === undefined || st === undefined) return;
    const sent = st.hedgesSent;
    const backup = s.replicas[1]?.state;
    out.push(
      `| ${s.mode.name} | ${r.calls} | ${sent} | ${st.hedgesWon} | ${sent === 0 ? '-' : `${((st.hedgesWon / sent) * 100).toFixed(0)}%`} | ${backup?.postsOnNewConnection ?? 0} of ${backup?.posts ?? 0} | ${ms(r.latency.getValueAtPercentile(50))} | ${ms(r.latency.getValueAtPercentile(99))} | ${ms(r.latency.getValueAtPercentile(99.9))} | ${ms(r.latency.maxValue)} | ${r.invalid ? 'no' : 'yes'} |`,
    );
  });
  out.push(
    '',
    'Counts cover the whole run (warm-up included); TTFT is measured from each call’s intended send time, over the measured seconds. "send lag ok: no" means the client sent some calls more than 1 ms late (p99): both clients and all servers share one process on a busy machine, so absolute times carry that lag; the two rows share it.',
  );
  for (const s of started) {
    await s.strategy.close();
    await Promise.all([...s.proxies, ...s.replicas].map((x) => x.close()));
  }
  return out.join('\n');
}
