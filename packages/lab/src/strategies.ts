import { handleAll, retry, TimeoutStrategy, timeout, wrap } from 'cockatiel';
import { type HedgeStats, hedge } from 'tailcut';
import * as undici from 'undici';

/** One way of calling the fleet, as the lab compares them. */
export interface Strategy {
  name: string;
  /** Makes call `id` (its attempts carry `x-lab-call: id`); resolves when the body is read. */
  call(id: number): Promise<void>;
  /** tailcut's own figures, for the tailcut strategy. */
  stats?(): HedgeStats;
  close(): Promise<void>;
}

/** Options shared by the strategies. */
export interface StrategyOptions {
  origins: string[];
  path?: string;
  /** Fixed delay of the fixed-delay hedger and the timeout of timeout-and-retry, ms. */
  fixedDelayMs: number;
  /** tailcut's percentile and budget. */
  percentile?: number | 'auto';
  budget?: { ratio: number; minPerSecond: number };
  /** Unbudgeted hedging (tailcut with an unlimited budget), for the metastable check. */
  unbudgeted?: boolean;
}

async function read(res: undici.Dispatcher.ResponseData): Promise<void> {
  await res.body.dump();
  if (res.statusCode >= 500 || res.statusCode === 429) throw new Error(`status ${res.statusCode}`);
}

/** No hedging: round robin over the replicas. */
export function none(o: StrategyOptions): Strategy {
  const agent = new undici.Agent({ connections: null });
  const path = o.path ?? '/';
  return {
    name: 'no hedging',
    call: async (id) =>
      read(
        await undici.request(`${o.origins[id % o.origins.length]}${path}`, {
          dispatcher: agent,
          headers: { 'x-lab-call': String(id) },
        }),
      ),
    close: () => agent.close(),
  };
}

/**
 * Fixed-delay hedging as peers usually default to: after `fixedDelayMs` without an answer, one
 * backup to the next replica, first answer wins, the other is aborted. No budget.
 */
export function fixedDelay(o: StrategyOptions): Strategy {
  const agent = new undici.Agent({ connections: null });
  const path = o.path ?? '/';
  return {
    name: `fixed-delay hedge (${o.fixedDelayMs} ms)`,
    async call(id) {
      const controllers = [new AbortController(), new AbortController()];
      const attempt = (k: number) =>
        undici
          .request(`${o.origins[(id + k) % o.origins.length]}${path}`, {
            dispatcher: agent,
            headers: { 'x-lab-call': String(id) },
            signal: controllers[k]?.signal,
          })
          .then(async (res) => {
            await read(res);
            return k;
          });
      let timer: NodeJS.Timeout | undefined;
      const backup = new Promise<number>((resolve, reject) => {
        timer = setTimeout(() => attempt(1).then(resolve, reject), o.fixedDelayMs);
      });
      try {
        const winner = await Promise.any([attempt(0), backup]);
        controllers[1 - winner]?.abort();
      } finally {
        clearTimeout(timer);
      }
    },
    close: () => agent.close(),
  };
}

/**
 * Timeout-and-retry with cockatiel, what a TypeScript user reaches for today: abandon the
 * attempt after `fixedDelayMs` and retry once on the next replica.
 */
export function cockatielRetry(o: StrategyOptions): Strategy {
  const agent = new undici.Agent({ connections: null });
  const path = o.path ?? '/';
  const policy = wrap(
    retry(handleAll, { maxAttempts: 1 }),
    timeout(o.fixedDelayMs, TimeoutStrategy.Aggressive),
  );
  return {
    name: `cockatiel timeout+retry (${o.fixedDelayMs} ms)`,
    async call(id) {
      let k = 0;
      // A signal of its own per call: without one, cockatiel hangs every call's timeout
      // listener on one shared signal.
      await policy.execute(async ({ signal }) => {
        const origin = o.origins[(id + k++) % o.origins.length];
        await read(
          await undici.request(`${origin}${path}`, {
            dispatcher: agent,
            headers: { 'x-lab-call': String(id) },
            signal,
          }),
        );
      }, new AbortController().signal);
    },
    close: () => agent.close(),
  };
}

/** tailcut's adaptive hedging through the undici interceptor. */
export function tailcut(o: StrategyOptions): Strategy {
  const interceptor = hedge({
    routes: [
      {
        name: 'lab',
        replicas: o.origins,
        hedge: { percentile: o.percentile ?? 95, minSamples: 50, initialDelayMs: o.fixedDelayMs },
      },
    ],
    budget: o.unbudgeted
      ? { ratio: 1, minPerSecond: 1_000_000, maxConcurrentHedges: 1_000_000 }
      : (o.budget ?? { ratio: 0.05, minPerSecond: 10 }),
  });
  const agent = new undici.Agent({ connections: null }).compose(interceptor);
  const path = o.path ?? '/';
  const [first] = o.origins;
  return {
    name: o.unbudgeted
      ? `unbudgeted hedging (p${o.percentile ?? 95})`
      : `tailcut (${o.percentile === 'auto' ? 'auto' : `p${o.percentile ?? 95}`}, budget)`,
    call: async (id) =>
      read(
        await undici.request(`${first}${path}`, {
          dispatcher: agent,
          headers: { 'x-lab-call': String(id) },
        }),
      ),
    stats: () => interceptor.stats(),
    close: () => agent.close(),
  };
}
