/**
 * Drives budgets as a fleet of clients would: each instance takes calls at a steady rate and
 * asks for a hedge on a share of them; every call and every granted hedge is logged with its
 * time, so a test can check the bound over every window afterwards.
 */
import type { BudgetPort } from 'tailcut/engine';

/** One logged event. */
export interface LoadEvent {
  at: number;
  instance: number;
  kind: 'call' | 'hedge';
}

/** Options of {@link drive}. */
export interface DriveOptions {
  callsPerSecond: number;
  /** Share of calls that ask for a hedge (0.5: every second call). */
  hedgeShare: number;
  /** Stop when this signal aborts. */
  signal: AbortSignal;
}

/** Runs the load until `signal` aborts; returns the log. */
export async function drive(ports: readonly BudgetPort[], o: DriveOptions): Promise<LoadEvent[]> {
  const log: LoadEvent[] = [];
  const started = performance.now();
  const done = ports.map(() => 0);
  const wants = ports.map(() => 0);
  await new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      const now = performance.now();
      const due = Math.floor(((now - started) / 1000) * o.callsPerSecond);
      ports.forEach((port, i) => {
        for (; (done[i] as number) < due; done[i] = (done[i] as number) + 1) {
          port.deposit();
          log.push({ at: now, instance: i, kind: 'call' });
          wants[i] = (wants[i] as number) + o.hedgeShare;
          if ((wants[i] as number) >= 1) {
            wants[i] = (wants[i] as number) - 1;
            if (port.acquire() === 'granted') {
              log.push({ at: now, instance: i, kind: 'hedge' });
              port.release();
            }
          }
        }
      });
      if (o.signal.aborted) {
        clearInterval(timer);
        resolve();
      }
    }, 10);
  });
  return log;
}

/**
 * The worst excess over the fleet bound across windows of `ttlMs` (stepped by 100 ms): hedges in
 * the window − (ratio × calls in the window and the ttl before it + minPerSecond × ttl).
 * Negative: within the bound with that much to spare.
 */
export function worstExcess(
  log: readonly LoadEvent[],
  o: { ratio: number; minPerSecond: number; ttlMs: number },
): { excess: number; hedges: number; calls: number } {
  if (log.length === 0) return { excess: 0, hedges: 0, calls: 0 };
  const first = (log[0] as LoadEvent).at;
  const last = (log[log.length - 1] as LoadEvent).at;
  let worst = Number.NEGATIVE_INFINITY;
  for (let start = first; start <= Math.max(first, last - o.ttlMs) + 1; start += 100) {
    let hedges = 0;
    let calls = 0;
    for (const e of log) {
      if (e.kind === 'hedge' && e.at >= start && e.at < start + o.ttlMs) hedges++;
      if (e.kind === 'call' && e.at >= start - o.ttlMs && e.at < start + o.ttlMs) calls++;
    }
    const bound = o.ratio * calls + (o.minPerSecond * o.ttlMs) / 1000;
    worst = Math.max(worst, hedges - bound);
  }
  const hedges = log.filter((e) => e.kind === 'hedge').length;
  return { excess: worst, hedges, calls: log.length - hedges };
}
