/** Opaque handle returned by {@link Clock.setTimeout}. */
export type TimerHandle = unknown;

/**
 * The time source of the engine. The real clock uses `performance.now()` and Node timers;
 * {@link VirtualClock} lets tests and the lab's simulator run the same engine in virtual time.
 */
export interface Clock {
  /** Milliseconds from an arbitrary origin, monotonic, fractional. */
  now(): number;
  /** Calls `callback` once after `ms` milliseconds. */
  setTimeout(callback: () => void, ms: number): TimerHandle;
  /** Cancels a timer; a no-op for a fired or cancelled one. */
  clearTimeout(handle: TimerHandle): void;
}

/**
 * The wall clock: `performance.now()` and Node timers. Timers stay ref'd (they are always
 * cleared when a call settles), so `process.getActiveResourcesInfo()` shows any left behind.
 */
export const realClock: Clock = {
  now: () => performance.now(),
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout(handle) {
    clearTimeout(handle as NodeJS.Timeout);
  },
};

interface VirtualTimer {
  at: number;
  seq: number;
  callback: () => void;
}

/**
 * A manual clock for tests and simulations. Time moves only through {@link VirtualClock.advance}
 * or {@link VirtualClock.runAll}; timers fire in order of due time, then of creation.
 */
export class VirtualClock implements Clock {
  #now: number;
  #seq = 0;
  #timers: VirtualTimer[] = [];

  constructor(start = 0) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  setTimeout(callback: () => void, ms: number): TimerHandle {
    const timer: VirtualTimer = { at: this.#now + Math.max(0, ms), seq: this.#seq++, callback };
    // Keep the list sorted by (at, seq): binary search for the insertion point.
    let lo = 0;
    let hi = this.#timers.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const other = this.#timers[mid] as VirtualTimer;
      if (other.at < timer.at || (other.at === timer.at && other.seq < timer.seq)) lo = mid + 1;
      else hi = mid;
    }
    this.#timers.splice(lo, 0, timer);
    return timer;
  }

  clearTimeout(handle: TimerHandle): void {
    const i = this.#timers.indexOf(handle as VirtualTimer);
    if (i >= 0) this.#timers.splice(i, 1);
  }

  /** Number of timers waiting to fire. */
  get pending(): number {
    return this.#timers.length;
  }

  /**
   * Moves time forward by `ms`, firing due timers in order. After each timer, pending promise
   * callbacks run (a macrotask turn), so async code driven by the timers makes progress.
   */
  async advance(ms: number): Promise<void> {
    const until = this.#now + ms;
    await flushMicrotasks();
    for (;;) {
      const next = this.#timers[0];
      if (next === undefined || next.at > until) break;
      this.#timers.shift();
      this.#now = next.at;
      next.callback();
      await flushMicrotasks();
    }
    this.#now = until;
  }

  /**
   * Fires every timer in order without waiting for promise callbacks in between: for code that
   * is driven by callbacks only (the race engine is), this simulates hours in milliseconds.
   */
  runAllSync(): void {
    for (;;) {
      const next = this.#timers.shift();
      if (next === undefined) break;
      this.#now = Math.max(this.#now, next.at);
      next.callback();
    }
  }

  /** Fires every timer, including ones created while running, until none is left. */
  async runAll(): Promise<void> {
    await flushMicrotasks();
    for (;;) {
      const next = this.#timers.shift();
      if (next === undefined) break;
      this.#now = Math.max(this.#now, next.at);
      next.callback();
      await flushMicrotasks();
    }
  }
}

function flushMicrotasks(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
