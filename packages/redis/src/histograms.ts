import * as hdr from 'hdr-histogram-js';

/** Highest latency tracked: one hour, in microseconds (as tailcut's own windows). */
const HIGHEST_US = 3_600_000_000;

/** Most latencies a warm start seeds a route's estimator with. */
const MAX_SEEDS = 500;

function newHistogram(): hdr.Histogram {
  return hdr.build({
    bitBucketSize: 32,
    autoResize: false,
    lowestDiscernibleValue: 1,
    highestTrackableValue: HIGHEST_US,
    numberOfSignificantValueDigits: 2,
  });
}

/**
 * This instance's recent primary latencies per route, in two halves: the snapshot published
 * covers the current and the previous publish interval, so it always holds at least one full
 * interval.
 */
export class RouteHistograms {
  private current = new Map<string, hdr.Histogram>();
  private previous = new Map<string, hdr.Histogram>();

  /** Records one latency (ms) of `route`. */
  record(route: string, ms: number): void {
    let h = this.current.get(route);
    if (h === undefined) {
      h = newHistogram();
      this.current.set(route, h);
    }
    h.recordValue(Math.min(HIGHEST_US, Math.max(1, Math.round(ms * 1000))));
  }

  /** The snapshot to publish per route (compressed, base64), then starts a new interval. */
  rotate(): Map<string, string> {
    const out = new Map<string, string>();
    for (const [route, h] of this.current) {
      const previous = this.previous.get(route);
      if (previous !== undefined) h.add(previous);
      if (h.totalCount > 0) out.set(route, hdr.encodeIntoCompressedBase64(h));
    }
    for (const h of this.previous.values()) h.destroy();
    this.previous = this.current;
    this.current = new Map();
    return out;
  }

  /** Frees the histograms. */
  clear(): void {
    for (const h of [...this.current.values(), ...this.previous.values()]) h.destroy();
    this.current.clear();
    this.previous.clear();
  }
}

/** One published value: the route's name, a newline, the compressed histogram. */
export function encodeSnapshot(route: string, base64: string): string {
  return `${route}\n${base64}`;
}

/** The histogram a snapshot holds, or undefined when it does not parse or holds a value out of range. */
function decodeSnapshot(base64: string): hdr.Histogram | undefined {
  let h: hdr.Histogram | undefined;
  try {
    h = hdr.decodeFromCompressedBase64(base64);
    if (h.maxValue > HIGHEST_US) throw new RangeError(`${h.maxValue} µs is over an hour`);
    return h;
  } catch {
    h?.destroy();
    return undefined;
  }
}

/**
 * Merges published snapshots per route (HDR histograms add exactly). A value that does not parse,
 * or holds a latency out of range (over an hour), is skipped alone: a foreign or corrupt key must
 * not stop a start, nor the other keys' warm start.
 */
export function mergeSnapshots(values: readonly unknown[]): Map<string, hdr.Histogram> {
  const merged = new Map<string, hdr.Histogram>();
  for (const value of values) {
    if (typeof value !== 'string') continue;
    const cut = value.indexOf('\n');
    if (cut < 0) continue;
    const route = value.slice(0, cut);
    const h = decodeSnapshot(value.slice(cut + 1));
    if (h === undefined) continue;
    let into = merged.get(route);
    if (into === undefined) {
      into = newHistogram();
      merged.set(route, into);
    }
    into.add(h);
    h.destroy();
  }
  return merged;
}

/**
 * Latencies (ms) that stand for `h` in a delay estimator: its values at evenly spaced
 * percentiles, as many as it holds (at most 500), so that any percentile read from them is the
 * fleet's.
 */
export function seedSamples(h: hdr.Histogram): number[] {
  const n = Math.min(MAX_SEEDS, h.totalCount);
  const out = new Array<number>(n);
  for (let i = 0; i < n; i++) out[i] = h.getValueAtPercentile((100 * (i + 0.5)) / n) / 1000;
  return out;
}
