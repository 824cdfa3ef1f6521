import * as hdr from 'hdr-histogram-js';
import { RouteState, realClock, validateClientOptions } from 'tailcut/engine';
import { rng } from '../random.js';

/** Figures of {@link measureSketch}: the delay and tail state's size and cost. */
export interface SketchFigures {
  /** Heap and array buffers added by one route (estimator, tail window, picker, counters), bytes. */
  bytesPerRoute: number;
  /** Of which the tail window (its histograms, fed with 5,000 calls), bytes. */
  bytesPerTail: number;
  /** Heap and array buffers added by one conditioning key (its estimator), bytes. */
  bytesPerKey: number;
  /** ns per operation, by name. */
  nsPerOp: Record<string, number>;
}

type Gc = () => void;

/** A D2-like latency, ms: lognormal median 20 ms, σ 0.4, 1% ×10. */
function latency(random: () => number): number {
  const u = Math.max(1e-12, random());
  const z = Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * random());
  const ms = 20 * Math.exp(0.4 * z);
  return random() < 0.01 ? ms * 10 : ms;
}

function used(gc: Gc): number {
  for (let i = 0; i < 3; i++) gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}

function route(): RouteState {
  const settings = validateClientOptions({ routes: [{ name: 'r', sloMs: 50 }] }).routes[0];
  if (settings === undefined) throw new Error('no route settings');
  return new RouteState(settings, realClock);
}

/**
 * Bytes one route adds (with `keys` keys, each fed `values` latencies; its tail window fed too
 * when `tail`), over `n` routes.
 */
function bytesPer(gc: Gc, n: number, keys: number, values: number, tail = true): number {
  const random = rng(1);
  const held: RouteState[] = [];
  const before = used(gc);
  for (let r = 0; r < n; r++) {
    const s = route();
    for (let i = 0; i < values; i++) {
      const ms = latency(random);
      s.estimator.record(ms, i % 50 === 0);
      if (tail) s.recordCall(ms);
    }
    s.estimator.delayMs();
    s.tail.stats();
    for (let k = 0; k < keys; k++) {
      const e = s.estimatorFor(`key-${k}`);
      for (let i = 0; i < values; i++) e.record(latency(random));
      e.delayMs();
    }
    held.push(s);
  }
  const bytes = (used(gc) - before) / n;
  if (held.length !== n) throw new Error('unreachable');
  return bytes;
}

/** ns per call of `f`, the best of 5 runs of `n` calls. */
function nsPerOp(n: number, f: (i: number) => void): number {
  let best = Number.POSITIVE_INFINITY;
  for (let run = 0; run < 5; run++) {
    const t = process.hrtime.bigint();
    for (let i = 0; i < n; i++) f(i);
    best = Math.min(best, Number(process.hrtime.bigint() - t) / n);
  }
  return best;
}

/**
 * Measures the delay and tail state of a route: bytes per route and per key (needs
 * `node --expose-gc`), and the cost of recording and reading it, next to an HDR histogram of
 * 2 significant digits over 1 µs..1 h (hdr-histogram-js, what the tail window used before).
 */
export function measureSketch(gc: Gc): SketchFigures {
  const routes = 1000;
  const perRoute = bytesPer(gc, routes, 0, 5000);
  const bytesPerTail = perRoute - bytesPer(gc, routes, 0, 5000, false);
  const perRouteWithKeys = bytesPer(gc, routes / 4, 20, 5000);
  const bytesPerKey = (perRouteWithKeys - perRoute) / 20;

  const random = rng(2);
  const values = Float64Array.from({ length: 1 << 16 }, () => latency(random));
  const mask = values.length - 1;
  const s = route();
  const old = hdr.build({
    bitBucketSize: 32,
    autoResize: false,
    lowestDiscernibleValue: 1,
    highestTrackableValue: 3_600_000_000,
    numberOfSignificantValueDigits: 2,
  });
  const oldTotal = hdr.build({
    bitBucketSize: 32,
    autoResize: false,
    lowestDiscernibleValue: 1,
    highestTrackableValue: 3_600_000_000,
    numberOfSignificantValueDigits: 2,
  });
  const n = 1_000_000;
  const ns: Record<string, number> = {};
  ns['estimator.record'] = nsPerOp(n, (i) => s.estimator.record(values[i & mask] as number));
  // A new value before each read, so that every read computes the percentile afresh.
  let t = 0;
  const clock = { ...realClock, now: () => (t += 20) };
  const settings = validateClientOptions({ routes: [{ name: 'r', sloMs: 50 }] }).routes[0];
  if (settings === undefined) throw new Error('no route settings');
  const fresh = new RouteState(settings, clock);
  for (let i = 0; i < 4096; i++) fresh.estimator.record(values[i] as number);
  ns['estimator.record + delayMs (recomputed)'] = nsPerOp(20_000, (i) => {
    fresh.estimator.record(values[i & mask] as number);
    fresh.estimator.delayMs();
  });
  ns['tail record (tailcut)'] = nsPerOp(n, (i) => s.recordCall(values[i & mask] as number));
  ns['tail record (HDR, slice + total)'] = nsPerOp(n, (i) => {
    const us = Math.round((values[i & mask] as number) * 1000);
    old.recordValue(us);
    oldTotal.recordValue(us);
  });
  ns['tail stats (tailcut)'] = nsPerOp(20_000, () => s.tail.stats());
  ns['tail stats (HDR: 4 percentiles, mean, sd)'] = nsPerOp(20_000, () => {
    for (const p of [50, 95, 99, 99.9]) oldTotal.getValueAtPercentile(p);
    oldTotal.stdDeviation / oldTotal.mean;
  });
  return { bytesPerRoute: perRoute, bytesPerTail, bytesPerKey, nsPerOp: ns };
}

/** Sketch figures as the Markdown of BENCHMARKS.md's scale section. */
export function sketchMarkdown(f: SketchFigures, command: string): string {
  const kib = (b: number) => `${(b / 1024).toFixed(1)} KiB`;
  return [
    '### Delay and tail state per route and per key',
    '',
    `Command: \`${command}\` (${new Date().toISOString()}, Node ${process.version}). Heap used + array`,
    'buffers after full GCs, over 1,000 routes (each estimator and tail window fed 5,000 D2 latencies)',
    'and 250 routes × 20 keys. The estimator keeps 2,048 latencies as 15-bit log codes and ticks',
    '(6 KiB); the tail window is two half-window log histograms (buckets 2% wide, percentiles within 1%).',
    '',
    `| per route (all of it: estimator, tail window, picker, counters) | of which the tail window | per key |`,
    '|---|---|---|',
    `| ${kib(f.bytesPerRoute)} | ${kib(f.bytesPerTail)} | ${kib(f.bytesPerKey)} |`,
    '',
    '| operation | ns/op |',
    '|---|---|',
    ...Object.entries(f.nsPerOp).map(([name, ns]) => `| ${name} | ${ns.toFixed(0)} |`),
  ].join('\n');
}
