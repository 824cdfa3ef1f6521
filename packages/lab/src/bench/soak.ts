import { hedge } from 'tailcut';
import * as undici from 'undici';
import { startFleet } from '../fleet/fleet.js';
import type { Profile } from '../fleet/profile.js';
import { exposedGc, type ProcessSample, sampleProcess, slopePerMinute } from './probe.js';

/** Options of {@link runSoak}. */
export interface SoakOptions {
  /** Calls per second on the long-lived client. Default 1,000. */
  rate?: number;
  /** Length of the run, s. Default 1,200 (20 minutes). */
  seconds?: number;
  /** Clients started and closed over the run (one call each). Default 1,000. */
  clients?: number;
  /** How often the process is sampled, s. Default 10. */
  sampleSeconds?: number;
  log?: (line: string) => void;
}

/** What a soak measured. */
export interface SoakReport {
  rate: number;
  seconds: number;
  started: number;
  ok: number;
  failed: number;
  /** Calls neither settled ok nor failed at the end: must be 0. */
  pending: number;
  clientsOpened: number;
  clientsClosed: number;
  hedgesSent: number;
  hedgesWon: number;
  samples: ProcessSample[];
  /** Least-squares slopes per minute, over the samples after the first minute. */
  slope: { heapBytes: number; handles: number; fds: number };
}

/** Replicas that stall now and then: lognormal median 10 ms, 1% of attempts ×100 (~1 s). */
const STALLING: Profile = { medianMs: 10, sigma: 0.3, stallProbability: 0.01, stallFactor: 100 };

function client(origins: string[]) {
  const interceptor = hedge({
    routes: [{ name: 'soak', replicas: origins, hedge: { percentile: 95, minSamples: 50 } }],
    budget: { ratio: 0.05, minPerSecond: 10 },
  });
  return { interceptor, agent: new undici.Agent().compose(interceptor) };
}

/**
 * A long run of one hedged client at `rate` calls/s against replicas (a child process) that
 * stall now and then, plus `clients` clients started and closed over the run, one call each:
 * the process's heap, handles and file descriptors sampled over time, with their slopes, and
 * every call accounted for (started = ok + failed, none pending).
 */
export async function runSoak(o: SoakOptions = {}): Promise<SoakReport> {
  const rate = o.rate ?? 1000;
  const seconds = o.seconds ?? 1200;
  const clients = o.clients ?? 1000;
  const log = o.log ?? (() => {});
  const gc = exposedGc();
  const fleet = await startFleet(3, STALLING, 19);
  const main = client(fleet.origins);
  const first = fleet.origins[0] as string;
  const counts = { started: 0, ok: 0, failed: 0, opened: 0, closed: 0 };
  const call = (agent: undici.Dispatcher) => {
    counts.started++;
    return undici
      .request(`${first}/soak`, { dispatcher: agent })
      .then(async (res) => {
        await res.body.dump();
        if (res.statusCode === 200) counts.ok++;
        else counts.failed++;
      })
      .catch(() => {
        counts.failed++;
      });
  };
  const churn = async () => {
    const c = client(fleet.origins);
    counts.opened++;
    await call(c.agent);
    await c.agent.close();
    counts.closed++;
  };

  const start = performance.now();
  const samples: ProcessSample[] = [sampleProcess(start, gc)];
  let issued = 0;
  let churned = 0;
  const churning: Promise<void>[] = [];
  await new Promise<void>((resolve) => {
    let nextSample = (o.sampleSeconds ?? 10) * 1000;
    const timer = setInterval(() => {
      const elapsed = performance.now() - start;
      const due = Math.min(rate * seconds, Math.floor((elapsed * rate) / 1000));
      while (issued < due) {
        issued++;
        void call(main.agent);
      }
      const churnDue = Math.min(clients, Math.floor((elapsed / 1000 / seconds) * clients));
      while (churned < churnDue) {
        churned++;
        churning.push(churn());
      }
      if (elapsed >= nextSample) {
        nextSample += (o.sampleSeconds ?? 10) * 1000;
        const s = sampleProcess(start, gc);
        samples.push(s);
        log(
          `${(s.atMs / 1000).toFixed(0)} s: ${counts.started} calls, heap ${(s.heapBytes / 2 ** 20).toFixed(1)} MiB, ${s.handles} handles, ${s.fds} fds, ${counts.opened} clients`,
        );
      }
      if (elapsed >= seconds * 1000) {
        clearInterval(timer);
        resolve();
      }
    }, 10);
  });
  while (churned < clients) {
    churned++;
    churning.push(churn());
  }
  await Promise.all(churning);
  // Every call settles: replicas answer within seconds (a stall is about a second).
  const deadline = performance.now() + 60_000;
  while (counts.ok + counts.failed < counts.started && performance.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
  }
  const stats = main.interceptor.stats();
  await main.agent.close();
  await fleet.stop();
  const steady = samples.filter((s) => s.atMs >= 60_000);
  const over = steady.length >= 3 ? steady : samples;
  return {
    rate,
    seconds,
    started: counts.started,
    ok: counts.ok,
    failed: counts.failed,
    pending: counts.started - counts.ok - counts.failed,
    clientsOpened: counts.opened,
    clientsClosed: counts.closed,
    hedgesSent: stats.routes.soak?.hedgesSent ?? 0,
    hedgesWon: stats.routes.soak?.hedgesWon ?? 0,
    samples,
    slope: {
      heapBytes: slopePerMinute(over, (s) => s.heapBytes),
      handles: slopePerMinute(over, (s) => s.handles),
      fds: slopePerMinute(over, (s) => s.fds),
    },
  };
}

/** A soak report as the Markdown of BENCHMARKS.md's scale section. */
export function soakMarkdown(r: SoakReport, command: string): string {
  const mib = (b: number) => (b / 2 ** 20).toFixed(1);
  const first = r.samples[0];
  const last = r.samples[r.samples.length - 1];
  const steady = r.samples.filter((s) => s.atMs >= 60_000);
  const range = (y: (s: ProcessSample) => number, f: (v: number) => string = String) => {
    const values = (steady.length > 0 ? steady : r.samples).map(y);
    return `${f(Math.min(...values))} … ${f(Math.max(...values))}`;
  };
  return [
    `### Soak: ${r.rate} calls/s for ${(r.seconds / 60).toFixed(1)} min, hedging on, replicas that stall`,
    '',
    `Command: \`${command}\` (${new Date().toISOString()}, Node ${process.version}). One hedged`,
    'client (undici Agent + hedge(), p95, budget 5% + 10/s) against 3 loopback replicas in a child',
    `process (lognormal median 10 ms, 1% of attempts ×100), plus ${r.clientsOpened} clients started`,
    'and closed over the run (one call each). Heap (used + array buffers, after a full GC),',
    'handles and file descriptors of the client process sampled every 10 s; slopes are least',
    'squares over the samples after the first minute. The machine is shared with other work:',
    'CPU-bound figures would be noisy, heap/handle/fd slopes are not.',
    '',
    '| calls started | ok | failed | pending | hedges sent | hedges won | clients opened / closed |',
    '|---|---|---|---|---|---|---|',
    `| ${r.started} | ${r.ok} | ${r.failed} | ${r.pending} | ${r.hedgesSent} | ${r.hedgesWon} | ${r.clientsOpened} / ${r.clientsClosed} |`,
    '',
    '| | first sample | last sample | range after the first minute | slope per minute |',
    '|---|---|---|---|---|',
    `| heap | ${mib(first?.heapBytes ?? 0)} MiB | ${mib(last?.heapBytes ?? 0)} MiB | ${range((s) => s.heapBytes, mib)} MiB | ${(r.slope.heapBytes / 1024).toFixed(1)} KiB |`,
    `| handles | ${first?.handles} | ${last?.handles} | ${range((s) => s.handles)} | ${r.slope.handles.toFixed(2)} |`,
    `| file descriptors | ${first?.fds} | ${last?.fds} | ${range((s) => s.fds)} | ${r.slope.fds.toFixed(2)} |`,
  ].join('\n');
}
