/**
 * Waiting in tests without sleeping for a fixed time. A test that sleeps "long enough" and then
 * counts fails on a loaded machine (the thing it waits for comes later) or passes vacuously on a
 * fast one. Instead: poll until the condition holds, and fail with a clear message at a deadline
 * far beyond what the condition needs on a healthy machine. Shared by packages/tailcut/test and
 * the end-to-end tests in test/.
 */
import { setTimeout as sleep } from 'node:timers/promises';

/** Options of {@link waitFor}. */
export interface WaitOptions {
  /** Fail after this many milliseconds. Default 10,000: generous, for a busy shared CI machine. */
  timeoutMs?: number;
  /** Milliseconds between two checks. Default 5. */
  intervalMs?: number;
  /**
   * What is awaited, for the failure message. A function is called at the deadline, so it can
   * report the state then (counts, handles).
   */
  message?: string | (() => string);
}

/** How long {@link waitFor} waits by default. */
export const WAIT_TIMEOUT_MS = 10_000;

/**
 * Resolves once `condition` returns true, checking it at once and then every `intervalMs`;
 * rejects with `message` (and the state it describes) if it does not hold within `timeoutMs`.
 * A condition that throws counts as not met yet; the last error is reported at the deadline.
 */
export async function waitFor(
  condition: () => boolean | Promise<boolean>,
  options: WaitOptions = {},
): Promise<void> {
  const { timeoutMs = WAIT_TIMEOUT_MS, intervalMs = 5, message = 'condition' } = options;
  const deadline = performance.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      if (await condition()) return;
      lastError = undefined;
    } catch (error) {
      lastError = error;
    }
    if (performance.now() >= deadline) {
      const what = typeof message === 'function' ? message() : message;
      const cause = lastError === undefined ? '' : ` (last check threw: ${String(lastError)})`;
      throw new Error(`waitFor: not met within ${timeoutMs} ms: ${what}${cause}`, {
        cause: lastError,
      });
    }
    await sleep(intervalMs);
  }
}

/** Number of active Node timers (`setTimeout`/`setInterval` handles) in this process. */
export function activeTimers(): number {
  return process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
}

/** Number of open TCP sockets (client and server ends) in this process. */
export function activeSockets(): number {
  return process.getActiveResourcesInfo().filter((r) => r === 'TCPSocketWrap').length;
}

/** The process's active resources by kind, for failure messages: `Timeout×3, TCPSocketWrap×2`. */
export function describeResources(): string {
  const counts = new Map<string, number>();
  for (const r of process.getActiveResourcesInfo()) counts.set(r, (counts.get(r) ?? 0) + 1);
  return [...counts].map(([kind, n]) => `${kind}×${n}`).join(', ') || 'none';
}

/**
 * The real clock (Node timers), counting the timers set through it that are still pending: a
 * client given this clock can be checked for timers left behind exactly, without the noise of
 * other timers in the process (sockets, servers, `AbortSignal.timeout`). Structurally a tailcut
 * `Clock`.
 */
export function countingClock() {
  const live = new Set<NodeJS.Timeout>();
  let most = 0;
  return {
    now: () => performance.now(),
    setTimeout(callback: () => void, ms: number): unknown {
      const handle: NodeJS.Timeout = setTimeout(() => {
        live.delete(handle);
        callback();
      }, ms);
      live.add(handle);
      most = Math.max(most, live.size);
      return handle;
    },
    clearTimeout(handle: unknown): void {
      clearTimeout(handle as NodeJS.Timeout);
      live.delete(handle as NodeJS.Timeout);
    },
    /** Timers set and neither fired nor cleared. */
    pending: () => live.size,
    /** The most timers ever pending at once. */
    mostPending: () => most,
  };
}
