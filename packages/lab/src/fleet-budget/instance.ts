/**
 * One instance of a service, as a child process of the fleet-budget lab: a tailcut client over
 * the lab's replicas with either its own budget or the fleet budget in Redis. argv[2] is the JSON
 * of {@link InstanceConfig}. It says `{ ready }` once its client exists, starts its calls at the
 * wall-clock time of a `{ go }` message, and answers `{ result }` at the end: calls and hedges per
 * 100 ms of wall clock (so the parent can sum the fleet over any window), the latency histogram
 * from each call's intended send time, and the modes it went through.
 */
import { createFleetBudget, type FleetBudget, type FleetMode } from '@tailcut/redis';
import * as hdr from 'hdr-histogram-js';
import { hedge } from 'tailcut';
import * as undici from 'undici';

/** What an instance is told. */
export interface InstanceConfig {
  origins: string[];
  budget: 'local' | 'fleet';
  redisUrl: string;
  name: string;
  ratio: number;
  minPerSecond: number;
  ttlMs: number;
  syncMs: number;
  percentile: number;
  rate: number;
  seconds: number;
  warmStart: boolean;
}

/** What an instance answers. */
export interface InstanceResult {
  /** [wall-clock 100 ms bin, calls, hedges sent] */
  bins: [number, number, number][];
  /** Latencies from intended send time, µs, compressed HDR. */
  latency: string;
  calls: number;
  errors: number;
  hedges: number;
  /** [wall-clock ms, mode] */
  modes: [number, FleetMode][];
  /** The route's hedge delay before the first call (ms). */
  startDelayMs: number;
}

const BIN_MS = 100;
const config = JSON.parse(process.argv[2] ?? '{}') as InstanceConfig;
const modes: [number, FleetMode][] = [];
let fleet: FleetBudget | undefined;
if (config.budget === 'fleet') {
  fleet = await createFleetBudget({
    url: config.redisUrl,
    name: config.name,
    ratio: config.ratio,
    minPerSecond: config.minPerSecond,
    ttlMs: config.ttlMs,
    syncMs: config.syncMs,
    warmStart: config.warmStart,
    onModeChange: (mode) => modes.push([Date.now(), mode]),
  });
  modes.push([Date.now(), fleet.stats().mode]);
}
const interceptor = hedge({
  routes: [{ name: 'lab', replicas: config.origins, hedge: { percentile: config.percentile } }],
  budget: fleet ?? { ratio: config.ratio, minPerSecond: config.minPerSecond, ttlMs: config.ttlMs },
});
const agent = new undici.Agent({ connections: null }).compose(interceptor);
const route = () => interceptor.stats().routes.lab;
const startDelayMs = route()?.delayMs ?? 0;
process.send?.({ ready: true });

async function run(startAt: number): Promise<InstanceResult> {
  const latency = hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 3_600_000_000 });
  const bins = new Map<number, [number, number]>();
  let last = { calls: 0, hedges: 0 };
  const sample = () => {
    const r = route();
    if (r === undefined) return;
    const bin = Math.floor(Date.now() / BIN_MS);
    const b = bins.get(bin) ?? [0, 0];
    b[0] += r.calls - last.calls;
    b[1] += r.hedgesSent - last.hedges;
    bins.set(bin, b);
    last = { calls: r.calls, hedges: r.hedgesSent };
  };
  const sampler = setInterval(sample, BIN_MS / 2);
  const [first] = config.origins;
  const total = Math.round(config.rate * config.seconds);
  const t0 = performance.now() + (startAt - Date.now());
  let errors = 0;
  const calls: Promise<void>[] = [];
  for (let i = 0; i < total; i++) {
    const intended = t0 + (i * 1000) / config.rate;
    const wait = intended - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    calls.push(
      undici
        .request(`${first}/`, {
          dispatcher: agent,
          headers: { 'x-lab-call': `${process.pid}-${i}` },
        })
        .then((res) => res.body.dump().then(() => res.statusCode))
        .then(
          (status) => {
            if (status >= 500) errors++;
          },
          () => {
            errors++;
          },
        )
        .finally(() => {
          latency.recordValue(Math.max(1, Math.round((performance.now() - intended) * 1000)));
        }),
    );
  }
  await Promise.all(calls);
  clearInterval(sampler);
  sample();
  const r = route();
  return {
    bins: [...bins].map(([bin, [c, h]]) => [bin, c, h]),
    latency: hdr.encodeIntoCompressedBase64(latency),
    calls: total,
    errors,
    hedges: r?.hedgesSent ?? 0,
    modes,
    startDelayMs,
  };
}

process.on('message', async (m: { go?: number }) => {
  if (m.go === undefined) return;
  const result = await run(m.go);
  await agent.close();
  await fleet?.close();
  process.send?.({ result }, () => process.exit(0));
});
