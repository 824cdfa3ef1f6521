import { readdirSync } from 'node:fs';

/** The process's own resources at one time. */
export interface ProcessSample {
  /** ms since the run started. */
  atMs: number;
  /** Heap used plus array buffers, bytes (after a full GC when `gc` was given). */
  heapBytes: number;
  /** Active handles and requests (process.getActiveResourcesInfo), timers included. */
  handles: number;
  /** Of which timers. */
  timers: number;
  /** Open file descriptors (/proc/self/fd; -1 where there is none). */
  fds: number;
}

/** Samples the process's heap, handles, timers and file descriptors. */
export function sampleProcess(startMs: number, gc?: () => void): ProcessSample {
  if (gc) for (let i = 0; i < 2; i++) gc();
  const m = process.memoryUsage();
  const resources = process.getActiveResourcesInfo();
  let fds = -1;
  try {
    fds = readdirSync('/proc/self/fd').length;
  } catch {}
  return {
    atMs: performance.now() - startMs,
    heapBytes: m.heapUsed + m.arrayBuffers,
    handles: resources.length,
    timers: resources.filter((r) => r === 'Timeout').length,
    fds,
  };
}

/** Least-squares slope of `y` over time, per minute. */
export function slopePerMinute(
  samples: readonly ProcessSample[],
  y: (s: ProcessSample) => number,
): number {
  const n = samples.length;
  if (n < 2) return 0;
  const xs = samples.map((s) => s.atMs / 60_000);
  const ys = samples.map(y);
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let num = 0;
  let den = 0;
  for (let i = 0; i < n; i++) {
    num += ((xs[i] as number) - mx) * ((ys[i] as number) - my);
    den += ((xs[i] as number) - mx) ** 2;
  }
  return den > 0 ? num / den : 0;
}

/** The full GC of a process started with --expose-gc, if it was. */
export function exposedGc(): (() => void) | undefined {
  return (globalThis as { gc?: () => void }).gc;
}
