import * as hdr from 'hdr-histogram-js';
import { rng } from '../random.js';
import type { Strategy } from '../strategies.js';
import { tick } from './ticker.js';

/** Options of one open-loop run. */
export interface LoadOptions {
  /** Calls per second. */
  rate: number;
  /** Measured seconds (after warm-up). */
  seconds: number;
  /** Unmeasured seconds first, so that tailcut learns its delay. Default 2. */
  warmupSeconds?: number;
  /** Poisson arrivals (default) or a fixed interval. */
  arrivals?: 'poisson' | 'fixed';
  seed?: number;
  /** Called about every 200 ms with the fraction done. */
  progress?: (fraction: number) => void;
  /** Called at the end of each second of the run with the second's index (from 0). */
  onSecond?: (second: number) => void;
  /** Called when the warm-up ends and measurement starts. */
  onMeasureStart?: () => void;
}

/** What one run measured. */
export interface LoadResult {
  /** Latency from each call's intended send time, integer µs. */
  latency: hdr.Histogram;
  /** How late each call was sent after its intended time, µs. */
  sendLag: hdr.Histogram;
  calls: number;
  errors: number;
  /** Client CPU per measured call, µs (user + system, whole process). */
  cpuUsPerCall: number;
  /** True when the send lag p99 exceeded 1 ms: the client could not keep the schedule. */
  invalid: boolean;
}

function histogram(): hdr.Histogram {
  return hdr.build({
    lowestDiscernibleValue: 1,
    highestTrackableValue: 3_600_000_000,
    numberOfSignificantValueDigits: 3,
  });
}

/**
 * Drives a strategy open loop: call i is due at its scheduled time whatever happened to the
 * calls before it, and its latency is measured from that intended time, so a stalled client
 * cannot hide its own delay (no coordinated omission). A ticker thread wakes the client at each
 * due time; the send lag is measured and a run whose p99 exceeds 1 ms is flagged invalid.
 */
export async function openLoop(strategy: Strategy, o: LoadOptions): Promise<LoadResult> {
  const random = rng(o.seed ?? 7);
  const warmup = o.warmupSeconds ?? 2;
  const total = o.seconds + warmup;
  const latency = histogram();
  const sendLag = histogram();
  // The schedule, in absolute milliseconds (timeOrigin + now), fixed before the run starts.
  const origin = performance.timeOrigin;
  const start = origin + performance.now() + 50;
  const schedule: number[] = [];
  for (let due = start; ; ) {
    due += o.arrivals === 'fixed' ? 1000 / o.rate : (-Math.log(1 - random()) * 1000) / o.rate;
    if (due - start > total * 1000) break;
    schedule.push(due);
  }
  const dues = Float64Array.from(schedule);
  let inFlight = 0;
  let drained: (() => void) | undefined;
  let errors = 0;
  let calls = 0;
  let cpuAtWarm: NodeJS.CpuUsage | undefined;
  let lastProgress = 0;
  let second = 0;
  await tick(dues, (id) => {
    const intended = (dues[id] as number) - origin; // on this thread's performance.now() scale
    const measured = (dues[id] as number) - start >= warmup * 1000;
    if (measured && cpuAtWarm === undefined) {
      cpuAtWarm = process.cpuUsage();
      o.onMeasureStart?.();
    }
    const lag = performance.now() - intended;
    inFlight++;
    strategy
      .call(id)
      .then(
        () => {
          if (measured)
            latency.recordValue(Math.max(1, Math.round((performance.now() - intended) * 1000)));
        },
        () => {
          if (measured) {
            errors++;
            latency.recordValue(Math.max(1, Math.round((performance.now() - intended) * 1000)));
          }
        },
      )
      .finally(() => {
        if (--inFlight === 0) drained?.();
      });
    if (measured) {
      calls++;
      sendLag.recordValue(Math.max(1, Math.round(Math.max(0, lag) * 1000)));
    }
    const elapsed = ((dues[id] as number) - start) / 1000;
    if (o.progress && elapsed - lastProgress > 0.2) {
      lastProgress = elapsed;
      o.progress(elapsed / total);
    }
    while (o.onSecond && elapsed >= second + 1) o.onSecond(second++);
  });
  if (inFlight > 0) await new Promise<void>((resolve) => (drained = resolve));
  const cpu = process.cpuUsage(cpuAtWarm);
  o.progress?.(1);
  return {
    latency,
    sendLag,
    calls,
    errors,
    cpuUsPerCall: (cpu.user + cpu.system) / Math.max(1, calls),
    invalid: sendLag.getValueAtPercentile(99) > 1000,
  };
}
