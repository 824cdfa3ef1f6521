import { describe, expect, it } from 'vitest';
import { BUDGET_PORT, type BudgetPort, type RouteTap } from '../src/engine/index.js';
import { createBudget, createHedgedFetch, type HedgeBudget } from '../src/index.js';
import { startReplica } from './support/replica.js';

/** A shared budget (tailcut's own underneath) that also takes the optional attach and observe. */
function tappingBudget() {
  const inner = createBudget()[BUDGET_PORT];
  const attached: RouteTap[] = [];
  const observed: [string, number][] = [];
  const port: BudgetPort = Object.assign(Object.create(inner) as BudgetPort, {
    attach: (routes: readonly RouteTap[]) => attached.push(...routes),
    observe: (route: string, ms: number) => observed.push([route, ms]),
  });
  const budget: HedgeBudget = { [BUDGET_PORT]: port, stats: () => inner.stats() };
  return { budget, attached, observed };
}

describe('budget port: attach and observe (for budgets shared beyond a process)', () => {
  it("hands the budget each route, whose seed sets the route's delay", async () => {
    const { budget, attached } = tappingBudget();
    const client = createHedgedFetch({
      routes: [
        { name: 'a', match: { path: '/a' }, hedge: { initialDelayMs: 500 } },
        { name: 'b', match: { path: '/b' } },
      ],
      budget,
    });
    expect(attached.map((r) => r.name)).toEqual(['a', 'b']);
    attached[0]?.seed(Array.from({ length: 100 }, (_, i) => i + 1));
    // Latencies are remembered as log codes, at or above, within 0.067%.
    expect(client.stats().routes.a?.delayMs).toBeCloseTo(95, 1);
    expect(client.stats().routes.b?.delayMs).toBe(100);
    await client.close();
  });

  it("tells the budget each primary's latency", async () => {
    const replica = await startReplica('r', () => ({ delayMs: 5 }));
    const { budget, observed } = tappingBudget();
    const client = createHedgedFetch({ routes: [{ name: 'r', match: { path: '/*' } }], budget });
    for (let i = 0; i < 3; i++) await (await client(`${replica.origin}/x`)).text();
    expect(observed).toHaveLength(3);
    for (const [route, ms] of observed) {
      expect(route).toBe('r');
      expect(ms).toBeGreaterThanOrEqual(4);
    }
    await client.close();
    await replica.close();
  });
});
