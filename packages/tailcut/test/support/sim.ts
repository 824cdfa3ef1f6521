import type { BudgetOptions, RouteOptions } from '../../src/config/options.js';
import { validateClientOptions } from '../../src/config/validate.js';
import { BUDGET_PORT, VirtualClock } from '../../src/engine/index.js';
import { type AttemptContext, type RaceWin, race } from '../../src/engine/race.js';
import { RouteState } from '../../src/engine/route-state.js';
import { createBudget } from '../../src/index.js';

/** How a simulated attempt ends. */
export type SimOutcome = { ms: number; result: 'ok' | 'retry' | 'fail' | 'error' };

/** One simulated attempt, as the test saw it. */
export interface SimAttempt {
  call: number;
  ctx: AttemptContext;
  startedAt: number;
  /** Virtual time the attempt reached its commit point, if it did. */
  committedAt?: number;
  abortedAt?: number;
  result?: SimOutcome['result'];
}

/** A route and budget under a virtual clock, with attempts whose latencies the test chooses. */
export function simulation(route: Partial<RouteOptions>, budget: BudgetOptions = {}) {
  const clock = new VirtualClock();
  const settings = validateClientOptions({ routes: [{ name: 'sim', ...route }] });
  const state = new RouteState(settings.routes[0] as never, clock);
  const hedgeBudget = createBudget({ ...budget, clock })[BUDGET_PORT];
  const attempts: SimAttempt[] = [];

  /** Runs one call whose attempt `i` behaves as `outcome(i)`. */
  function call(
    id: number,
    outcome: (attempt: number) => SimOutcome,
    options: { signal?: AbortSignal; maxAttempts?: number } = {},
  ): Promise<RaceWin<SimAttempt>> {
    return race<SimAttempt>({
      route: state,
      budget: hedgeBudget,
      clock,
      signal: options.signal,
      maxAttempts: options.maxAttempts ?? state.settings.maxAttempts,
      run(ctx, report) {
        const record: SimAttempt = { call: id, ctx, startedAt: clock.now() };
        attempts.push(record);
        const o = outcome(ctx.index);
        const timer = clock.setTimeout(() => {
          record.committedAt = clock.now();
          record.result = o.result;
          if (o.result === 'error') report.fail(new Error(`attempt ${ctx.index} failed`));
          else report.commit(record);
        }, o.ms);
        ctx.onCancel({
          cancel() {
            clock.clearTimeout(timer);
            record.abortedAt = clock.now();
          },
        });
      },
      judge: (r) => (r.result === 'ok' ? 'accept' : r.result === 'retry' ? 'retry' : 'fail'),
      discard: () => {},
    });
  }

  return { clock, state, budget: hedgeBudget, attempts, call };
}
